package handover

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
)

// Home is what a run's home offers the run's programs through the
// endpoint: `textslash background` and `textslash preview`.
type Home interface {
	// Background starts argv in the home as a process that outlives the
	// run, in dir with env (the caller's: `textslash background`'s
	// directory and environment); it returns its id and the file its
	// output goes to.
	Background(argv []string, dir string, env []string) (id, log string, err error)
	// Preview opens a link to port in the home.
	Preview(port int) (link string, err error)
}

// HomeReply is the endpoint's answer to /background and /preview.
type HomeReply struct {
	ID    string `json:"id,omitempty"`    // the background process's
	Log   string `json:"log,omitempty"`   // its output file, in the workspace
	URL   string `json:"url,omitempty"`   // the preview link
	Image string `json:"image,omitempty"` // the page's screenshot, in the reply
	Error string `json:"error,omitempty"`
}

// SetHome gives the run of token what its home offers.
func (s *Endpoint) SetHome(token string, h Home) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if run := s.runs[token]; run != nil {
		run.home = h
	}
}

// background starts the form's arg values as a background process of the
// run's home, in its dir with its env values.
func (s *Endpoint) background(w http.ResponseWriter, req *http.Request, run *shotRun) {
	if run.home == nil {
		reply(w, http.StatusConflict, HomeReply{Error: "this run has no home to keep a process in (homes need root, and are off for approvals and clones)"})
		return
	}
	argv := req.Form["arg"]
	id, log, err := run.home.Background(argv, req.Form.Get("dir"), req.Form["env"])
	if err != nil {
		run.log.Warn().Err(err).Strs("argv", argv).Msg("background process not started")
		reply(w, http.StatusBadRequest, HomeReply{Error: err.Error()})
		return
	}
	run.log.Info().Str("background", id).Strs("argv", argv).Msg("background process started")
	reply(w, http.StatusOK, HomeReply{ID: id, Log: log})
}

// preview opens a link to the form's port in the run's home, with a
// screenshot of the page through it for the reply.
func (s *Endpoint) preview(w http.ResponseWriter, req *http.Request, run *shotRun) {
	if run.home == nil {
		reply(w, http.StatusConflict, HomeReply{Error: "this run has no home to preview"})
		return
	}
	port, err := strconv.Atoi(req.Form.Get("port"))
	if err != nil {
		reply(w, http.StatusBadRequest, HomeReply{Error: "want a port number"})
		return
	}
	link, err := run.home.Preview(port)
	if err != nil {
		reply(w, http.StatusBadRequest, HomeReply{Error: err.Error()})
		return
	}
	rep := HomeReply{URL: link}
	if img, err := s.Take(req.Context(), run.job, link); err != nil {
		run.log.Warn().Err(err).Msg("preview's screenshot not taken")
	} else {
		run.mu.Lock()
		run.images = append(run.images, img)
		run.mu.Unlock()
		rep.Image = img.ID
	}
	reply(w, http.StatusOK, rep)
}

// Take screenshots page (on the host's network: a preview link) for job,
// and stores it.
func (s *Endpoint) Take(ctx context.Context, job contract.Job, page string) (contract.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return s.capture(ctx, ShotRequest{URL: page}, &shotRun{job: job})
}

// HomeURL is the endpoint's URL of path (/background, /preview), from
// its $TEXTSLASH_SHOT_URL.
func HomeURL(shotURL, path string) string { return strings.TrimSuffix(shotURL, "/shot") + path }

// AskHome posts form to the endpoint's path as `textslash background`
// and `textslash preview` do, with the run's token.
func AskHome(ctx context.Context, shotURL, token, path string, form url.Values) (HomeReply, error) {
	if shotURL == "" || token == "" {
		return HomeReply{}, fmt.Errorf("%s and %s are not set: this works inside an agent's run", ShotURLVar, ShotTokenVar)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, HomeURL(shotURL, path), strings.NewReader(form.Encode()))
	if err != nil {
		return HomeReply{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return HomeReply{}, err
	}
	defer resp.Body.Close()
	var rep HomeReply
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return HomeReply{}, err
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		return HomeReply{}, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if resp.StatusCode != http.StatusOK {
		return rep, fmt.Errorf("%s", rep.Error)
	}
	return rep, nil
}

// TakeFor screenshots page into the reply of the run of token.
func (s *Endpoint) TakeFor(ctx context.Context, token, page string) error {
	s.mu.Lock()
	run := s.runs[token]
	s.mu.Unlock()
	if run == nil {
		return fmt.Errorf("no run of token")
	}
	img, err := s.Take(ctx, run.job, page)
	if err != nil {
		return err
	}
	run.mu.Lock()
	run.images = append(run.images, img)
	run.mu.Unlock()
	return nil
}

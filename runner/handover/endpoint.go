package handover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/handover/pageshot"
	"github.com/textslash/textslash/runner/sandbox"
)

// The variables that tell an agent's programs where the runner's screenshot
// endpoint is; `textslash shot` reads them.
const (
	ShotURLVar   = "TEXTSLASH_SHOT_URL"
	ShotTokenVar = "TEXTSLASH_SHOT_TOKEN"
)

// ShotRequest asks for one screenshot (POST $TEXTSLASH_SHOT_URL, form
// fields url, desktop=1, full=1).
type ShotRequest struct {
	URL      string
	Desktop  bool
	FullPage bool
}

// ShotReply is the endpoint's answer: the image joins the run's reply.
type ShotReply struct {
	ID     string `json:"id"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Size   int    `json:"size"`
	// Error says why there is no image (any status but 200).
	Error string `json:"error,omitempty"`
}

// Endpoint is the runner's screenshot endpoint on loopback. Each run
// gets a token of its own in its agent's environment; only that run can
// attach images to its reply, and only while it runs. Its browser also
// draws diffs (DiffImage).
type Endpoint struct {
	store   *Store
	browser *pageshot.Browser
	url     string
	srv     *http.Server

	mu   sync.Mutex
	runs map[string]*shotRun // by token
}

// shotRun is one run's share of the endpoint.
type shotRun struct {
	job   contract.Job
	trace string // the job's, for the image events
	log   zerolog.Logger
	proxy func() (string, error) // the run's network's HTTP proxy, nil: the host's

	home Home // what its home offers (background, preview); nil: none

	mu     sync.Mutex
	taken  int // shots asked for, counting failed ones
	images []contract.Image
}

// EndpointConfig is what the endpoint is started with.
type EndpointConfig struct {
	// Addr is the host:port it listens on.
	Addr string
	// Chromium is the browser's binary ("": looked for).
	Chromium string
	// User is the agents' user, nil when agents run as textslash
	// (browserUser); Sandboxed says runs are in the sandbox
	// (browserNoSandbox).
	User      *sandbox.User
	Sandboxed bool
}

// Listen listens on cfg.Addr and serves the endpoint, storing its images
// in store, until Close.
func Listen(cfg EndpointConfig, store *Store) (*Endpoint, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("screenshot endpoint: %w", err)
	}
	s := &Endpoint{
		store:   store,
		browser: pageshot.New(pageshot.Config{Bin: cfg.Chromium, NoSandbox: browserNoSandbox(cfg.User, cfg.Sandboxed), User: browserUser(cfg.User)}),
		url:     "http://" + ln.Addr().String() + "/shot",
		runs:    map[string]*shotRun{},
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the host:port the endpoint listens on.
func (s *Endpoint) Addr() string {
	return strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/shot")
}

// Close closes the endpoint and the browser.
func (s *Endpoint) Close() {
	_ = s.srv.Close()
	_ = s.browser.Close()
}

// Begin gives job's run its token and the environment that carries it;
// trace is the job's, for the image events.
func (s *Endpoint) Begin(job contract.Job, trace string, log zerolog.Logger) (token string, env []string) {
	return s.BeginWith(NewToken(), job, trace, log, nil)
}

// NewToken is a token for BeginWith: unguessable.
func NewToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// BeginWith is Begin with the token given: a home's, the same for each of
// its runs (one at a time), so that the agent kept warm there, whose
// environment cannot change, still reaches the run it serves now.
//
// proxy, when set, gives the HTTP proxy the run's pages are reached
// through: its home's network, where its dev server listens (localhost
// there is not the host's).
func (s *Endpoint) BeginWith(token string, job contract.Job, trace string, log zerolog.Logger, proxy func() (string, error)) (string, []string) {
	s.mu.Lock()
	s.runs[token] = &shotRun{job: job, trace: trace, log: log, proxy: proxy}
	s.mu.Unlock()
	return token, []string{ShotURLVar + "=" + s.url, ShotTokenVar + "=" + token}
}

// End ends the share of the run of token and returns the images it took.
func (s *Endpoint) End(token string) []contract.Image {
	s.mu.Lock()
	run := s.runs[token]
	delete(s.runs, token)
	s.mu.Unlock()
	if run == nil {
		return nil
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	return run.images
}

// reply writes rep as JSON with code.
func reply(w http.ResponseWriter, code int, rep any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(rep)
}

// ServeHTTP serves POST /shot, /background and /preview to the run whose
// bearer token the request carries.
func (s *Endpoint) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	fail := func(code int, format string, args ...any) {
		reply(w, code, ShotReply{Error: fmt.Sprintf(format, args...)})
	}
	serve := map[string]func(http.ResponseWriter, *http.Request, *shotRun){"/shot": s.shot, "/background": s.background, "/preview": s.preview}[req.URL.Path]
	if serve == nil {
		fail(http.StatusNotFound, "not found: POST /shot, /background or /preview")
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, "use POST")
		return
	}
	token, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	run := s.runs[token]
	s.mu.Unlock()
	if token == "" || run == nil {
		fail(http.StatusUnauthorized, "no run of yours is going on: send $%s as a bearer token", ShotTokenVar)
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, 256<<10) // a background's caller's environment
	if err := req.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "bad form: %v", err)
		return
	}
	serve(w, req, run)
}

// shot takes a screenshot for run's reply.
func (s *Endpoint) shot(w http.ResponseWriter, req *http.Request, run *shotRun) {
	fail := func(code int, format string, args ...any) {
		reply(w, code, ShotReply{Error: fmt.Sprintf(format, args...)})
	}
	sr := ShotRequest{URL: req.Form.Get("url"), Desktop: formBool(req.Form, "desktop"), FullPage: formBool(req.Form, "full")}
	if err := checkShotURL(sr.URL); err != nil {
		fail(http.StatusBadRequest, "%v", err)
		return
	}
	run.mu.Lock()
	room := run.taken < screenshotsPerRun
	run.taken++
	run.mu.Unlock()
	if !room {
		fail(http.StatusTooManyRequests, "at most %d images per reply", screenshotsPerRun)
		return
	}
	log := run.log.With().Str("url", sr.URL).Bool("desktop", sr.Desktop).Bool("full", sr.FullPage).Logger()
	start := time.Now()
	img, err := s.capture(req.Context(), sr, run)
	if err != nil {
		log.Warn().Err(err).Dur("took_ms", time.Since(start)).Msg("screenshot failed")
		code := http.StatusBadGateway
		if errors.Is(err, pageshot.ErrNoChromium) {
			code = http.StatusServiceUnavailable
		}
		fail(code, "%v", err)
		return
	}
	run.mu.Lock()
	run.images = append(run.images, img)
	n := len(run.images)
	run.mu.Unlock()
	s.store.publishImage(log.WithContext(contract.WithTrace(req.Context(), run.trace)), run.job, img, "shot"+strconv.Itoa(n))
	log.Info().Str("object", img.ID).Int("size", img.Size).Int("width", img.Width).Int("height", img.Height).
		Dur("took", time.Since(start)).Msg("screenshot taken")
	reply(w, http.StatusOK, ShotReply{ID: img.ID, Width: img.Width, Height: img.Height, Size: img.Size})
}

func formBool(f url.Values, key string) bool {
	b, _ := strconv.ParseBool(f.Get(key))
	return b || f.Get(key) == "yes" || f.Get(key) == "on"
}

// checkShotURL allows web pages only: the browser runs as textslash, so a
// file: URL would show the agent files it cannot read itself.
func checkShotURL(raw string) error {
	if raw == "" {
		return errors.New("no url")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: only http:// and https:// pages", raw)
	}
	return nil
}

// capture takes the shot and stores it in the media store of the run's person.
func (s *Endpoint) capture(ctx context.Context, sr ShotRequest, run *shotRun) (contract.Image, error) {
	start := time.Now()
	o := pageshot.Options{URL: sr.URL, Desktop: sr.Desktop, FullPage: sr.FullPage, MaxBytes: screenshotMaxBytes, Profile: run.job.User.Key()}
	if run.proxy != nil {
		p, err := run.proxy()
		if err != nil {
			return contract.Image{}, fmt.Errorf("the run's network: %w", err)
		}
		o.Proxy = p
	}
	shot, err := s.browser.Capture(ctx, o)
	if err != nil {
		shotSeconds.WithLabelValues("error").Observe(time.Since(start).Seconds())
		return contract.Image{}, err
	}
	shotSeconds.WithLabelValues("ok").Observe(time.Since(start).Seconds())
	return s.store.storeImage(ctx, run.job.User, shot)
}

// Shoot asks the runner's endpoint (as given by the environment of an
// agent's program) for a screenshot; what `textslash shot` does.
func Shoot(ctx context.Context, endpoint, token string, sr ShotRequest) (ShotReply, error) {
	if endpoint == "" || token == "" {
		return ShotReply{}, fmt.Errorf("%s and %s are not set: textslash shot works inside an agent's run", ShotURLVar, ShotTokenVar)
	}
	form := url.Values{"url": {sr.URL}}
	if sr.Desktop {
		form.Set("desktop", "1")
	}
	if sr.FullPage {
		form.Set("full", "1")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return ShotReply{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ShotReply{}, err
	}
	defer resp.Body.Close()
	var rep ShotReply
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return ShotReply{}, err
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		return ShotReply{}, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if resp.StatusCode != http.StatusOK {
		return rep, fmt.Errorf("%s: %s", resp.Status, rep.Error)
	}
	return rep, nil
}

// InstallCommand copies the textslash binary to <workspaces>/.bin, a
// place the agent user can run it from, and returns that directory for the
// agents' PATH. The copy is made again when the binary changed.
func InstallCommand(workspaces, bin string) (string, error) {
	src, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(workspaces, ".bin")
	dst := filepath.Join(dir, "textslash")
	if have, err := os.Stat(dst); err == nil && have.Size() == fi.Size() && have.ModTime().Equal(fi.ModTime()) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".textslash-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chtimes(tmp.Name(), fi.ModTime(), fi.ModTime()); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp.Name(), dst)
}

// browserUser is who the screenshot browser runs as: the agents' user
// when there is one (nobody, for sandboxed runs of a root textslash),
// never textslash's own privileges for pages agents pick; nil runs it as
// textslash, when textslash itself is unprivileged or no user is known.
func browserUser(user *sandbox.User) *syscall.Credential {
	if user == nil {
		return nil
	}
	return &syscall.Credential{Uid: user.UID, Gid: user.GID}
}

// browserNoSandbox: Chromium's own sandbox (user namespaces) is used
// wherever the runs' sandbox works; as root (which it refuses), or as the
// agents' user without the runs' sandbox (where namespaces may be what is
// missing), it runs without.
func browserNoSandbox(user *sandbox.User, sandboxed bool) bool {
	if user == nil {
		return os.Geteuid() == 0
	}
	return !sandboxed
}

// shotSeconds times the shots the endpoint takes.
var shotSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "textslash_screenshot_duration_seconds",
	Help:    "How long screenshots took in the runner's browser, by result (ok, error).",
	Buckets: []float64{0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30},
}, []string{"result"})

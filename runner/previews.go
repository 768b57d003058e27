package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/preview"
	"github.com/textslash/textslash/runner/sandbox"
)

// Previews: a person's app, running in their home (a background process
// a run handed over), opened through a link of the preview server's
// (package preview). Runs reach them with `textslash background` and
// `textslash preview` (the endpoint's Home, homeHands); the person with
// the keywords preview, previews and stop (a job of ActionHome, homeAgent).

// errNoPreviews: previews cannot be given here.
var errNoPreviews = errors.New("previews need homes with a network of their own (textslash as root, with slirp4netns)")

// startPreviews starts the preview server when homes have networks of
// their own: a link must never reach the host's loopback. Its address
// taken is an error, not previews off: a tunnel or proxy set up to that
// port would reach whatever else listens there.
func (r *Runner) startPreviews() (stop func(), err error) {
	if r.homes == nil || r.homes.Network == nil {
		r.log.Info().Msg("previews off: they need homes with a network of their own")
		return func() {}, nil
	}
	p, err := preview.Listen(preview.Config{Addr: r.cfg.PreviewAddr, URL: r.cfg.PreviewURL, TTL: r.cfg.PreviewTTL}, r.log)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("preview links: %s is taken, by another textslash or another program (%w); set TEXTSLASH_PREVIEW_ADDR to a free host:port and point the links' tunnel or proxy there", r.cfg.PreviewAddr, err)
	case err != nil:
		return nil, fmt.Errorf("preview links: %w (TEXTSLASH_PREVIEW_ADDR=%s)", err, r.cfg.PreviewAddr)
	}
	r.previews = p
	return func() { _ = p.Close() }, nil
}

// openPreview opens a link to port in person's home h.
func (r *Runner) openPreview(person string, h *sandbox.Home, port int) (preview.Link, error) {
	if r.previews == nil || h.Net() == nil {
		return preview.Link{}, errNoPreviews
	}
	if slices.Contains(r.forwardedPorts(), port) {
		// It would hand whoever holds the link what textslash forwards
		// there: the screenshot endpoint, the model API on loopback.
		return preview.Link{}, fmt.Errorf("port %d is textslash's own in your workspace (its screenshots, the model), not your app's", port)
	}
	return r.previews.Open(preview.Target{Person: person, Home: h.ID(), Port: port, Dial: h.Net().Dial, Touch: h.Touch})
}

// homeHands is what a run's home offers its programs (handover.Home).
type homeHands struct {
	r       *Runner
	h       *sandbox.Home
	person  string
	command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

// Background starts argv in the home, kept past the run, in dir with env
// (the caller's).
func (hh homeHands) Background(argv []string, dir string, env []string) (string, string, error) {
	b, err := hh.h.StartBackground(hh.command, sandbox.BackgroundCall{Argv: argv, Dir: dir, Env: env})
	if err != nil {
		return "", "", err
	}
	return b.ID, b.Log, nil
}

// Preview opens a link to port in the home.
func (hh homeHands) Preview(port int) (string, error) {
	l, err := hh.r.openPreview(hh.person, hh.h, port)
	return l.URL, err
}

// homeOf is person's home on this runner, nil when they have none.
func (r *Runner) homeOf(person string) *sandbox.Home {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, hs := range r.kept {
		if hs.person == person && hs.home != nil && hs.home.Alive() {
			return hs.home
		}
	}
	return nil
}

// appPorts are the ports something of the person's listens on in home h:
// not those textslash forwards into it.
func (r *Runner) appPorts(h *sandbox.Home) []int {
	forwarded := r.forwardedPorts()
	return slices.DeleteFunc(h.Listening(), func(p int) bool { return slices.Contains(forwarded, p) })
}

// forwardedPorts are the ports textslash forwards into homes: on them,
// a home's loopback reaches the host's (the screenshot endpoint, the
// model API or a proxy there).
func (r *Runner) forwardedPorts() []int {
	var ports []int
	if r.homes != nil && r.homes.Network != nil {
		for _, a := range r.homes.Network.Forward {
			if ap, err := netip.ParseAddrPort(a); err == nil {
				ports = append(ports, int(ap.Port()))
			}
		}
	}
	return ports
}

// homeAgent answers the person's keywords about their home (a job of
// ActionHome) without an agent: preview [<port>|off], previews, stop <id>.
type homeAgent struct {
	r     *Runner
	token func() string // the run's token at the endpoint, for the screenshot
}

// Texts of homeAgent's replies.
const (
	MsgNoHome      = "Nothing of yours is running here: ask the agent to start your app (it runs it with textslash background <command>), then send preview <port>."
	MsgNothingHere = "Nothing listens in your workspace. Ask the agent to start your app's server (textslash background <command>), then send preview <port>."
	MsgPreview     = "Your app on port %d: %s\nThe link works for %s; preview off ends it."
)

func (a homeAgent) Run(ctx context.Context, run *agent.Run) (agent.Result, error) {
	person := run.Job.User.Key()
	f := strings.Fields(strings.ToLower(run.Job.Text))
	h := a.r.homeOf(person)
	var text string
	switch {
	case len(f) == 0:
		text = MsgFailed
	case f[0] == "previews":
		text = a.r.listHome(person, h)
	case f[0] == "stop" && len(f) == 2:
		text = fmt.Sprintf("No background process %s is running.", f[1])
		if h != nil && h.StopBackground(f[1]) > 0 {
			text = fmt.Sprintf("Stopped %s.", f[1])
		}
	case len(f) == 2 && f[1] == "off":
		links, procs := 0, 0
		if a.r.previews != nil {
			links = a.r.previews.Off(person)
		}
		if h != nil {
			procs = h.StopBackground("")
		}
		text = fmt.Sprintf("Previews off: %s ended, %s stopped.", contract.Plural(links, "link"),
			contract.Plural(procs, "background process", "background processes"))
	case h == nil:
		text = MsgNoHome
	default:
		text = a.preview(ctx, person, h, f[1:])
	}
	return agent.Result{Text: text}, nil
}

// preview opens a link to the port asked for, or the one port something
// listens on.
func (a homeAgent) preview(ctx context.Context, person string, h *sandbox.Home, args []string) string {
	ports := a.r.appPorts(h)
	var port int
	switch {
	case len(args) == 1:
		port, _ = strconv.Atoi(args[0])
	case len(ports) == 1:
		port = ports[0]
	case len(ports) == 0:
		return MsgNothingHere
	default:
		return fmt.Sprintf("Several ports listen in your workspace: %s. Send preview <port>.", joinInts(ports))
	}
	l, err := a.r.openPreview(person, h, port)
	if err != nil {
		return "No preview: " + err.Error() + "."
	}
	text := fmt.Sprintf(MsgPreview, port, l.URL, contract.Duration(time.Until(l.Expires).Round(time.Minute)))
	if !slices.Contains(ports, port) {
		text += fmt.Sprintf("\nNothing listens on port %d in your workspace yet: start your app, then open the link.", port)
	} else if a.r.shots != nil {
		if err := a.r.shots.TakeFor(ctx, a.token(), l.URL); err != nil {
			a.r.log.Warn().Err(err).Str("user", person).Msg("preview's screenshot not taken")
		}
	}
	return text
}

// listHome is what runs in person's home h and the links into it.
func (r *Runner) listHome(person string, h *sandbox.Home) string {
	var b strings.Builder
	if r.previews != nil {
		for _, l := range r.previews.List(person) {
			fmt.Fprintf(&b, "Port %d: %s (for %s more)\n", l.Port, l.URL, contract.Duration(time.Until(l.Expires).Round(time.Minute)))
		}
	}
	if h != nil {
		for _, bg := range h.Backgrounds() {
			fmt.Fprintf(&b, "%s: %s (running %s; output in %s; stop %s ends it)\n", bg.ID, bg.Command,
				contract.Duration(time.Since(bg.Started).Round(time.Second)), bg.Log, bg.ID)
		}
	}
	if b.Len() == 0 {
		return "No previews and nothing running in the background."
	}
	return strings.TrimSpace(b.String())
}

// handedOver is what the done event of a run of person's that began at
// start says of their home: what it keeps running (status lists it), and
// the links the run opened (channels show each as a button or a link; the
// reply's text gets any it does not name). h is the person's home, nil
// when they have none.
func (r *Runner) handedOver(done *contract.Event, person string, h *sandbox.Home, start time.Time) {
	if h == nil {
		return
	}
	for _, bg := range h.Backgrounds() {
		done.Background = append(done.Background, contract.Background{ID: bg.ID, Command: bg.Command, Started: bg.Started.UTC()})
	}
	if r.previews == nil {
		return
	}
	links := r.previews.List(person)
	slices.Reverse(links) // oldest first
	for _, l := range links {
		if l.Opened.Before(start) {
			continue
		}
		done.Links = append(done.Links, contract.Link{URL: l.URL, Label: fmt.Sprintf("Open port %d", l.Port)})
		if !strings.Contains(done.Text, l.URL) {
			done.Text = joinText(done.Text, l.URL)
		}
	}
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

var _ handover.Home = homeHands{}

package home

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/preview"
	"github.com/textslash/textslash/runner/sandbox"
)

// Previews: a person's app, running in their home (a background process
// a run handed over), opened through a link of the preview server's
// (package preview). Runs reach them with `textslash background` and
// `textslash preview` (the endpoint's Home: Hands); the person with the
// keywords preview, previews and stop.

// ErrNoPreviews: previews cannot be given here.
var ErrNoPreviews = errors.New("previews need homes with a network of their own (textslash as root, with slirp4netns)")

// StartPreviews starts the preview server when homes have networks of
// their own: a link must never reach the host's loopback. Its address
// taken is an error, not previews off: a tunnel or proxy set up to that
// port would reach whatever else listens there.
func (k *Keeper) StartPreviews(cfg preview.Config, log zerolog.Logger) (stop func(), err error) {
	if k.Network == nil {
		log.Info().Msg("previews off: they need homes with a network of their own")
		return func() {}, nil
	}
	p, err := preview.Listen(cfg, log)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("preview links: %s is taken, by another textslash or another program (%w); set TEXTSLASH_PREVIEW_ADDR to a free host:port and point the links' tunnel or proxy there", cfg.Addr, err)
	case err != nil:
		return nil, fmt.Errorf("preview links: %w (TEXTSLASH_PREVIEW_ADDR=%s)", err, cfg.Addr)
	}
	k.mu.Lock()
	k.previews = p
	k.mu.Unlock()
	return func() { _ = p.Close() }, nil
}

// Previews is the preview links' server; nil while previews are off.
func (k *Keeper) Previews() *preview.Server {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.previews
}

// OpenPreview opens a link to port in person's home h.
func (k *Keeper) OpenPreview(person string, h *sandbox.Home, port int) (preview.Link, error) {
	p := k.Previews()
	if p == nil || h.Net() == nil {
		return preview.Link{}, ErrNoPreviews
	}
	if slices.Contains(k.forwarded(), port) {
		// It would hand whoever holds the link what textslash forwards
		// there: the screenshot endpoint, the model API on loopback.
		return preview.Link{}, fmt.Errorf("port %d is textslash's own in your workspace (its screenshots, the model), not your app's", port)
	}
	return p.Open(preview.Target{Person: person, Home: h.ID(), Port: port, Dial: h.Net().Dial, Touch: h.Touch})
}

// AppPorts are the ports something of the person's listens on in home h:
// not those textslash forwards into it.
func (k *Keeper) AppPorts(h *sandbox.Home) []int {
	forwarded := k.forwarded()
	return slices.DeleteFunc(h.Listening(), func(p int) bool { return slices.Contains(forwarded, p) })
}

// forwarded are the ports textslash forwards into homes: on them, a
// home's loopback reaches the host's (the screenshot endpoint, the model
// API or a proxy there).
func (k *Keeper) forwarded() []int {
	var ports []int
	if k.Network != nil {
		for _, a := range k.Network.Forward {
			if ap, err := netip.ParseAddrPort(a); err == nil {
				ports = append(ports, int(ap.Port()))
			}
		}
	}
	return ports
}

// List is what runs in person's home h (nil: none) and the links into it.
func (k *Keeper) List(person string, h *sandbox.Home) string {
	var b strings.Builder
	if p := k.Previews(); p != nil {
		for _, l := range p.List(person) {
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

// HandedOver is what the done event of a run of person's that began at
// start says of their home h (nil: none): what it keeps running (status
// lists it), and the links the run opened (channels show each as a button
// or a link; the reply's text gets any it does not name).
func (k *Keeper) HandedOver(done *contract.Event, person string, h *sandbox.Home, start time.Time) {
	if h == nil {
		return
	}
	for _, bg := range h.Backgrounds() {
		done.Background = append(done.Background, contract.Background{ID: bg.ID, Command: bg.Command, Started: bg.Started.UTC()})
	}
	p := k.Previews()
	if p == nil {
		return
	}
	links := p.List(person)
	slices.Reverse(links) // oldest first
	for _, l := range links {
		if l.Opened.Before(start) {
			continue
		}
		done.Links = append(done.Links, contract.Link{URL: l.URL, Label: fmt.Sprintf("Open port %d", l.Port)})
		switch {
		case strings.Contains(done.Text, l.URL):
		case done.Text == "":
			done.Text = l.URL
		default:
			done.Text += "\n\n" + l.URL
		}
	}
}

// Hands is what a run's home offers its programs (handover.Home).
type Hands struct {
	K       *Keeper
	H       *sandbox.Home
	Person  string
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

var _ handover.Home = Hands{}

// Background starts argv in the home, kept past the run, in dir with env
// (the caller's).
func (hh Hands) Background(argv []string, dir string, env []string) (string, string, error) {
	b, err := hh.H.StartBackground(hh.Command, sandbox.BackgroundCall{Argv: argv, Dir: dir, Env: env})
	if err != nil {
		return "", "", err
	}
	return b.ID, b.Log, nil
}

// Preview opens a link to port in the home.
func (hh Hands) Preview(port int) (string, error) {
	l, err := hh.K.OpenPreview(hh.Person, hh.H, port)
	return l.URL, err
}

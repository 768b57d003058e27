// The browser's life: one warm Chromium, started by the first shot,
// replaced when it dies, shared by the shots in turn, stopped by Close.

package pageshot

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"
)

// DefaultTimeout bounds one shot when Config.Timeout is zero.
const DefaultTimeout = 20 * time.Second

// Config sets up a Browser.
type Config struct {
	// Chromium binary; empty: look up chromium, chromium-browser,
	// google-chrome in PATH.
	Bin string
	// NoSandbox adds --no-sandbox (needed as root). Without it Chromium runs
	// with its sandbox, which refuses to start as root.
	NoSandbox bool
	// Timeout bounds one shot (new tab, navigation, load, capture);
	// default DefaultTimeout. Starting Chromium is bounded apart (30 s).
	Timeout time.Duration
	// User, when set, is who Chromium runs as (the agents' unprivileged
	// user), with its own sandbox and a profile that user owns; it loads
	// the pages agents pick, and must not hold textslash's privileges.
	User *syscall.Credential
}

// Browser is one warm Chromium shared by every shot, started lazily on the
// first shot and restarted if it dies. Shots take turns in one warm tab
// (opening a tab costs a new renderer process: about 130 ms and a fifth of
// a CPU-second); after each shot the tab goes to about:blank, so no page
// runs between shots, and a shot that fails closes it, so the next starts
// in a fresh one. One tab at a time also keeps it the front one: a tab
// behind another is hidden and its page gets no animation frames. Close
// stops it.
type Browser struct {
	cfg Config
	// closing is closed by Close: a shot waiting for its turn gives up, and
	// the running browser stops at once (see launch), which ends the shot
	// in progress.
	closing chan struct{}
	end     func() // closes closing, once
	// turn holds one token, taken by the shot in progress and by Close; a
	// channel so that waiting for it respects the caller's ctx.
	turn chan struct{}
	cur  *instance // the running browser or nil; under turn
}

// instance is one Chromium process.
//
// Its handle is a context.Context kept for the life of the process, not a
// request's context: chromedp.NewContext returns the browser as a context
// (chromedp's handle, what chromedp.Do and the next chromedp.NewContext
// take), and the process lives as long as it is not cancelled, across
// every Capture.
type instance struct {
	// handle is the chromedp context of the browser's first tab. chromedp
	// ties the process to it, and cancels it when the connection to the
	// process drops, so it is done once the browser has died.
	handle context.Context
	// stop kills the process and waits until it and its profile directory
	// are gone; only the first call does anything (chromedp's cancel must
	// run once).
	stop func()
	// tab is the warm tab, or nil until the next shot opens one.
	tab *tab
}

// New returns a Browser; Chromium starts on the first Capture.
func New(cfg Config) *Browser {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	closing := make(chan struct{})
	end := sync.OnceFunc(func() { close(closing) })
	return &Browser{cfg: cfg, closing: closing, end: end, turn: make(chan struct{}, 1)}
}

// Close ends the shot in progress, if any, and stops Chromium. Later
// Captures fail with ErrClosed.
func (b *Browser) Close() error {
	b.end()
	b.turn <- struct{}{}
	defer func() { <-b.turn }()
	if b.cur != nil {
		b.cur.stop()
		b.cur = nil
	}
	return nil
}

// Capture loads o.URL in the browser's tab (kept between shots, replaced
// after a failed one), waits for the load event and returns a
// JPEG of the viewport (or the full page) under o.MaxBytes. It waits for its
// turn while another shot runs (bounded by ctx only); then Config.Timeout
// bounds the shot. It fails when the page does not load in time (the error
// wraps context.DeadlineExceeded), when loading fails (it wraps
// chromedp.ErrPageLoad, e.g. connection refused), when the tab crashes
// (ErrPageCrashed) or when ctx ends; the browser stays usable. If the
// browser died before or during the shot, a fresh one takes the shot once
// more.
func (b *Browser) Capture(ctx context.Context, o Options) (Shot, error) {
	if o.URL == "" {
		return Shot{}, errors.New("shot: no URL")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	select {
	case b.turn <- struct{}{}:
	case <-ctx.Done():
		return Shot{}, ctx.Err()
	case <-b.closing:
		return Shot{}, ErrClosed
	}
	defer func() { <-b.turn }()
	if b.isClosed() {
		return Shot{}, ErrClosed
	}
	var err error
	for range 2 {
		var inst *instance
		if inst, err = b.running(ctx); err != nil {
			return Shot{}, err
		}
		var s Shot
		s, err = b.shoot(ctx, inst, o)
		if err == nil || inst.handle.Err() == nil || ctx.Err() != nil || b.isClosed() {
			return s, err
		}
		// The browser died under this shot: again in a fresh one.
	}
	return Shot{}, err
}

// running returns the running browser, starting one if there is none or
// the last one died. The caller has the turn.
func (b *Browser) running(ctx context.Context) (*instance, error) {
	if b.cur != nil {
		if b.cur.handle.Err() == nil {
			return b.cur, nil
		}
		b.cur.stop() // reaps the dead one and removes its profile
		b.cur = nil
	}
	inst, err := b.launch(ctx)
	if err != nil {
		return nil, err
	}
	b.cur = inst
	return inst, nil
}

// isClosed reports whether Close was called.
func (b *Browser) isClosed() bool {
	select {
	case <-b.closing:
		return true
	default:
		return false
	}
}

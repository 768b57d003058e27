// The browser's life: one goroutine owns a warm Chromium and its tab; it
// takes the shots asked for over a channel one at a time, starts Chromium
// for the first, replaces it when it dies and stops it at Close. The
// browser's and the tab's chromedp contexts are local variables of that
// goroutine (session, tabSession), never fields; so is each shot's caller
// ctx, which travels as the first argument of the owner's functions.

package pageshot

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
//
// One goroutine (serve, started by New, ended by Close) owns the browser
// and its tab; Capture hands it a request and waits for the reply.
type Browser struct {
	cfg Config
	// requests carries the shots to the owner. Unbuffered: a shot waits
	// for its turn in the send, where the caller's ctx can end the wait.
	requests chan call
	// closing is closed by Close: a shot waiting for its turn gives up, and
	// the running browser stops at once (see launch), which ends the shot
	// in progress.
	closing chan struct{}
	end     func() // closes closing, once
	// done is closed when the owner has stopped Chromium and returned.
	done chan struct{}
	// pidNow is the running browser's process id, 0 while none runs;
	// written by the owner, read by tests and benchmarks.
	pidNow atomic.Int64
}

// call is what Capture sends the owner: a func that gives the caller's ctx
// and the shot asked for. The owner calls it as it takes the shot (receive);
// from there the ctx goes along with the request as the first argument and
// result of the owner's functions, and no struct holds it.
type call func() (context.Context, request)

// request is one shot handed to the owner; the ctx of the Capture that
// sent it goes beside it (see call).
type request struct {
	o     Options
	reply chan<- result // buffered: the owner never waits on it
	// retried: the browser died under this shot once, and a fresh one
	// takes it; it does not get a third.
	retried bool
}

// result is the owner's answer to a request.
type result struct {
	shot Shot
	err  error
}

// New returns a Browser and starts the goroutine that owns it; Chromium
// starts on the first Capture. Close ends both.
func New(cfg Config) *Browser {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	closing := make(chan struct{})
	b := &Browser{cfg: cfg, requests: make(chan call), closing: closing,
		end: sync.OnceFunc(func() { close(closing) }), done: make(chan struct{})}
	go b.serve()
	return b
}

// Close ends the shot in progress, if any, stops Chromium and waits until
// it is gone. Later Captures fail with ErrClosed.
func (b *Browser) Close() error {
	b.end()
	<-b.done
	return nil
}

// Capture loads o.URL in the browser's tab (kept between shots of the same
// profile and proxy, replaced after a failed one), waits for the load event
// and returns a JPEG of the viewport (or the full page) under o.MaxBytes. It
// waits for its turn while another shot runs (bounded by ctx only); then
// Config.Timeout bounds the shot. It fails when the page does not load in
// time (the error wraps context.DeadlineExceeded), when loading fails (it
// wraps chromedp.ErrPageLoad, e.g. connection refused), when the tab
// crashes (ErrPageCrashed) or when ctx ends; the browser stays usable. If
// the browser died before or during the shot, a fresh one takes the shot
// once more.
func (b *Browser) Capture(ctx context.Context, o Options) (Shot, error) {
	if o.URL == "" {
		return Shot{}, errors.New("shot: no URL")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if b.isClosed() {
		return Shot{}, ErrClosed
	}
	reply := make(chan result, 1)
	take := func() (context.Context, request) { return ctx, request{o: o, reply: reply} }
	select {
	case b.requests <- take:
	case <-ctx.Done():
		return Shot{}, ctx.Err()
	case <-b.closing:
		return Shot{}, ErrClosed
	}
	r := <-reply // every request taken is answered
	return r.shot, r.err
}

// serve is the owner: it waits for a shot, and serves it and the next ones
// in a browser started for it (session); a shot the browser died under, or
// that came as it died, is taken in the next. It returns, the browser
// stopped, once Close is called.
func (b *Browser) serve() {
	defer close(b.done)
	ctx, req := b.receive(nil)
	for req != nil {
		if ctx, req = b.session(ctx, *req); req == nil {
			ctx, req = b.receive(nil)
		}
	}
}

// session starts Chromium and serves shots in it, req (of the Capture
// whose ctx is ctx) first, until Close or until the browser dies; it
// returns a shot to take in a fresh browser, with its Capture's ctx, or
// nil. The browser is stopped (process reaped, profile removed) when it
// returns.
func (b *Browser) session(ctx context.Context, req request) (context.Context, *request) {
	bctx, stop, err := b.launch(ctx)
	if err != nil {
		req.reply <- result{err: err}
		return nil, nil
	}
	defer stop()
	b.pidNow.Store(int64(browserPID(bctx)))
	defer b.pidNow.Store(0)
	for {
		nctx, next := b.tabSession(ctx, bctx, req)
		if next == nil || bctx.Err() != nil {
			// Close, or the browser died: under the shot (next is that
			// shot, once more), as the next came (next) or between shots
			// (nil).
			return nctx, next
		}
		ctx, req = nctx, *next
	}
}

// receive waits for the next shot and returns it with its Capture's ctx:
// nil once Close is called (a shot taken after it is answered ErrClosed)
// or when died is closed (the browser died between shots; nil: there is
// no browser).
func (b *Browser) receive(died <-chan struct{}) (context.Context, *request) {
	select {
	case take := <-b.requests:
		ctx, r := take()
		if b.isClosed() {
			r.reply <- result{err: ErrClosed}
			return nil, nil
		}
		return ctx, &r
	case <-died:
		return nil, nil
	case <-b.closing:
		return nil, nil
	}
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

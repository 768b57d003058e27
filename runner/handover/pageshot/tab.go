// The warm tab: opened for a profile's shots, given one shot at a time
// with its timeout, its crashes and its dialogs, left on about:blank after
// a shot and closed after a failed one or when another's shot comes.

package pageshot

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// blankTimeout bounds the way to about:blank after a shot.
const blankTimeout = 5 * time.Second

// tab is what the owner keeps of the warm tab besides its chromedp
// context (tctx, a local variable of tabSession, as the browser's is of
// session): how to close it and whom its events go to.
type tab struct {
	// close closes the tab and disposes of its browser context; it may be
	// called more than once.
	close context.CancelFunc
	// shot receives the events of the shot in progress.
	shot atomic.Pointer[tabEvents]
}

// tabEvents are what a shot wants to hear of its tab: crashed is called
// when the renderer dies, dialogs signalled when the page opens a
// JavaScript dialog.
type tabEvents struct {
	crashed func()
	dialogs chan struct{}
}

func (t *tab) event(ev any) {
	h := t.shot.Load()
	if h == nil {
		return
	}
	switch ev.(type) {
	case *inspector.EventTargetCrashed:
		h.crashed()
	case *page.EventJavascriptDialogOpening:
		select {
		case h.dialogs <- struct{}{}:
		default:
		}
	}
}

// sameTab reports whether the shots of a and b may share a tab: the same
// profile's, through the same proxy or none.
func sameTab(a, b Options) bool { return a.Profile == b.Profile && a.Proxy == b.Proxy }

// throughProxy sets o's proxy, if any, on a new browser context. Loopback
// addresses, which Chromium sends around a proxy by default, go through it
// too ("<-loopback>"): a page on localhost is the proxy's localhost.
func throughProxy(o Options) chromedp.CreateBrowserContextOption {
	return func(p *target.CreateBrowserContextParams) {
		if o.Proxy != "" {
			p.ProxyServer, p.ProxyBypassList = o.Proxy, "<-loopback>"
		}
	}
}

// tabSession opens a tab in the browser of bctx for req's profile and
// takes req's shot in it (ctx being its Capture's), then the next shots
// that may share it (same profile, same proxy), until a shot fails (the
// tab is closed: a tab left mid-load, crashed or stuck in a dialog is no
// base for the next shot) or another's shot comes. It returns that next
// shot with its Capture's ctx, to take in a tab of its own, or in a fresh
// browser if this one has ended; the shot the browser died under, to take
// once more in a fresh one (see failed); or nil when the browser ended
// (Close, or it died) between shots.
func (b *Browser) tabSession(ctx, bctx context.Context, req request) (context.Context, *request) {
	tctx, t, err := b.openTab(ctx, bctx, req.o)
	if err != nil {
		return b.failed(ctx, bctx, req, fmt.Errorf("shot %s: open a tab: %w", req.o.URL, b.why(ctx, bctx, err)))
	}
	defer t.close()
	for {
		s, err := b.shoot(ctx, bctx, tctx, t, req.o)
		if err != nil {
			t.close()
			return b.failed(ctx, bctx, req, fmt.Errorf("shot %s: %w", req.o.URL, err))
		}
		req.reply <- result{shot: s}
		nctx, n := b.receive(bctx.Done())
		if n == nil || !sameTab(n.o, req.o) || bctx.Err() != nil {
			return nctx, n
		}
		ctx, req = nctx, *n
	}
}

// failed answers a failed shot and waits for the next (see tabSession);
// if the browser died under the shot (and neither its Capture's ctx nor
// Close ended it), it returns the shot instead, with ctx, to be taken once
// more in a fresh browser.
func (b *Browser) failed(ctx, bctx context.Context, req request, err error) (context.Context, *request) {
	if bctx.Err() != nil && ctx.Err() == nil && !b.isClosed() && !req.retried {
		req.retried = true
		return ctx, &req
	}
	req.reply <- result{err: err}
	return b.receive(bctx.Done())
}

// openTab opens a tab in the browser of bctx for o's shots, in a browser
// context of its own (disposed with the tab), with o's proxy: nothing of
// another profile's pages carries over. It returns the tab's chromedp
// context.
func (b *Browser) openTab(ctx, bctx context.Context, o Options) (context.Context, *tab, error) {
	t := &tab{}
	tctx, closeTab := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext(throughProxy(o)), chromedp.WithNewWindow(false), chromedp.WithListener(t.event))
	t.close = closeTab
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	defer context.AfterFunc(ctx, t.close)()   // the first Run cannot take ctx
	if err := chromedp.Do(tctx); err != nil { // opens the tab
		t.close()
		return nil, nil, err
	}
	// The browser tells of a crash even when the tab does not.
	id := chromedp.FromContext(tctx).Target.TargetID
	crash := &inspector.EventTargetCrashed{}
	err := chromedp.ListenBrowser(tctx, func(ev any) {
		if ev, ok := ev.(*target.EventTargetCrashed); ok && ev.TargetID == id {
			t.event(crash)
		}
	})
	if err == nil {
		// The page as it is now: the agent may have changed it since the
		// last shot, whatever its cache headers or service worker say.
		_, err = chromedp.Call(tctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
	}
	if err == nil {
		_, err = chromedp.Call(tctx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true})
	}
	if err != nil {
		t.close()
		return nil, nil, err
	}
	return tctx, t, nil
}

// shoot takes one shot in the tab t of tctx, in the browser of bctx.
func (b *Browser) shoot(ctx, bctx, tctx context.Context, t *tab, o Options) (Shot, error) {
	// The shot ends with its timeout, with the caller's ctx, or when the
	// tab's renderer crashes.
	pctx, cancelCause := context.WithCancelCause(tctx)
	defer cancelCause(nil)
	defer context.AfterFunc(ctx, func() { cancelCause(context.Cause(ctx)) })()
	sctx, cancel := context.WithTimeoutCause(pctx, b.cfg.Timeout,
		fmt.Errorf("no page within %v: %w", b.cfg.Timeout, context.DeadlineExceeded))
	defer cancel()
	events := &tabEvents{crashed: func() { cancelCause(ErrPageCrashed) }, dialogs: make(chan struct{}, 1)}
	t.shot.Store(events)
	defer t.shot.Store(nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { dismissDialogs(sctx, events.dialogs, stop) })

	s, err := shootTab(sctx, o)
	if err == nil {
		// Nothing of the page runs until the next shot.
		blank, cancel := context.WithTimeout(sctx, blankTimeout)
		err = chromedp.Do(blank, chromedp.Navigate("about:blank"))
		cancel()
		if err != nil {
			err = fmt.Errorf("leave the page: %w", err)
		}
	}
	close(stop)
	wg.Wait()
	if err != nil {
		return Shot{}, b.why(sctx, bctx, err)
	}
	return s, nil
}

// why says why an action on a tab failed once its context ended, for
// chromedp reports only the context's error. After Close it is ErrClosed
// whether or not ctx ended yet: when Close ends the browser's context,
// chromedp can see the connection drop (and fail the action) before the
// cancel reaches the shot's context.
func (b *Browser) why(ctx, bctx context.Context, err error) error {
	switch {
	case b.isClosed():
		return fmt.Errorf("%w (%w)", ErrClosed, err)
	case ctx.Err() == nil:
		return err
	case bctx.Err() != nil:
		return fmt.Errorf("browser died: %w", err)
	default: // timeout, ctx, crash
		return context.Cause(ctx)
	}
}

// dismissDialogs dismisses each alert, confirm or prompt of the page, which
// would otherwise stall it, until stop is closed.
func dismissDialogs(tab context.Context, dialogs <-chan struct{}, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-tab.Done():
			return
		case <-dialogs:
			chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	}
}

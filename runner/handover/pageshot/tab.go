// The warm tab: opened for a profile's shots, given one shot at a time
// with its timeout, its crashes and its dialogs, left on about:blank after
// a shot and closed after a failed one.

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

// tab is a browser tab kept open for the shots to come.
//
// Its handle is a context.Context kept across Captures, not a request's
// context: chromedp.NewContext returns the tab as a context (chromedp's
// handle, what chromedp.Do and chromedp.Call act on), and the tab stays
// open until it is cancelled. Each shot runs under a context of its own
// derived from it (see shoot).
type tab struct {
	handle  context.Context // chromedp context of the tab, under the browser's
	close   context.CancelFunc
	profile string // whose shots it takes (Options.Profile)
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

// openTab opens the warm tab of inst for profile's shots, in a browser
// context of its own (disposed with the tab): nothing of another
// profile's pages carries over.
func (b *Browser) openTab(ctx context.Context, inst *instance, profile string) (*tab, error) {
	t := &tab{profile: profile}
	t.handle, t.close = chromedp.NewContext(inst.handle, chromedp.WithNewBrowserContext(), chromedp.WithNewWindow(false), chromedp.WithListener(t.event))
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	defer context.AfterFunc(ctx, t.close)()       // the first Run cannot take ctx
	if err := chromedp.Do(t.handle); err != nil { // opens the tab
		t.close()
		return nil, err
	}
	// The browser tells of a crash even when the tab does not.
	id := chromedp.FromContext(t.handle).Target.TargetID
	crash := &inspector.EventTargetCrashed{}
	err := chromedp.ListenBrowser(t.handle, func(ev any) {
		if ev, ok := ev.(*target.EventTargetCrashed); ok && ev.TargetID == id {
			t.event(crash)
		}
	})
	if err == nil {
		// The page as it is now: the agent may have changed it since the
		// last shot, whatever its cache headers or service worker say.
		_, err = chromedp.Call(t.handle, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
	}
	if err == nil {
		_, err = chromedp.Call(t.handle, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true})
	}
	if err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

// shoot takes one shot in the warm tab of inst, opening one if need be.
func (b *Browser) shoot(ctx context.Context, inst *instance, o Options) (Shot, error) {
	if inst.tab != nil && inst.tab.profile != o.Profile {
		inst.tab.close()
		inst.tab = nil
	}
	if inst.tab == nil {
		t, err := b.openTab(ctx, inst, o.Profile)
		if err != nil {
			return Shot{}, fmt.Errorf("shot %s: open a tab: %w", o.URL, b.why(ctx, inst, err))
		}
		inst.tab = t
	}
	t := inst.tab
	// The shot ends with its timeout, with the caller's ctx, or when the
	// tab's renderer crashes.
	pctx, cancelCause := context.WithCancelCause(t.handle)
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
		// A tab left mid-load, crashed or stuck in a dialog is no base for
		// the next shot.
		err = b.why(sctx, inst, err)
		t.close()
		inst.tab = nil
		return Shot{}, fmt.Errorf("shot %s: %w", o.URL, err)
	}
	return s, nil
}

// why says why an action on a tab failed once its context ended, for
// chromedp reports only the context's error. After Close it is ErrClosed
// whether or not ctx ended yet: when Close ends the browser's context,
// chromedp can see the connection drop (and fail the action) before the
// cancel reaches the shot's context.
func (b *Browser) why(ctx context.Context, inst *instance, err error) error {
	switch {
	case b.isClosed():
		return fmt.Errorf("%w (%w)", ErrClosed, err)
	case ctx.Err() == nil:
		return err
	case inst.handle.Err() != nil:
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

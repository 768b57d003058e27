// Package pageshot takes screenshots of web pages in a warm headless
// Chromium and turns them, or images an agent saved, into JPEGs small
// enough to send to a phone.
package pageshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig of the shots
	"math"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

const (
	// DefaultTimeout bounds one shot when Config.Timeout is zero.
	DefaultTimeout = 20 * time.Second
	// DefaultMaxBytes is the JPEG ceiling when Options.MaxBytes or the
	// maxBytes of Compress is zero: 600 KB.
	DefaultMaxBytes = 600_000

	// launchTimeout bounds the start of Chromium (about 0.5 s when warm
	// on disk).
	launchTimeout = 30 * time.Second
	// blankTimeout bounds the way to about:blank after a shot.
	blankTimeout = 5 * time.Second
)

// Viewports in CSS pixels; both are drawn at device scale 2 first.
const (
	mobileWidth, mobileHeight   = 390, 844
	desktopWidth, desktopHeight = 1440, 900
)

// binNames are looked up in PATH when Config.Bin is empty. The headless
// shell (Debian's chromium-headless-shell) comes first: Chromium without
// the browser's UI, built for automation, it takes a phone shot for about a
// quarter of the CPU of the full browser in headless mode. Debian's
// /usr/bin/chromium-headless-shell is a script that does not exec the
// browser, so that a browser that dies would leave the script waiting and
// one that is killed would leave the browser running: the binary itself
// comes first.
var binNames = []string{"/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"}

// ladder is the order in which Capture tries renderings until one is under
// the ceiling: quality first, then half the pixels in each direction.
// lower is the smallest size seen relative to the first step (text pages,
// coloured blocks, noise; viewport and full page; mobile and desktop): a
// step that even so would be over the ceiling is not taken, but the last
// step always is.
var ladder = []struct {
	scale   float64
	quality int
	lower   float64
}{{2, 75, 1}, {2, 50, 0.6}, {1, 75, 0.15}, {1, 50, 0.09}, {1, 35, 0.06}}

// maxFullHeight cuts full-page shots, in CSS pixels of the viewport: at
// scale 2 that is 32,768 pixels, half the longest side a JPEG can have.
const maxFullHeight = 16384

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

// Options describe one shot.
type Options struct {
	URL string
	// Desktop: 1440×900; default mobile 390×844 (mobile and touch
	// emulation); device scale factor 2 for both.
	Desktop bool
	// FullPage: the whole page, not just the viewport; a page wider than
	// the viewport is shrunk to fit it, one longer than 16,384 CSS pixels is
	// cut (Shot.Truncated).
	FullPage bool
	// FitContent, with FullPage: the image is as tall as the page's
	// content (its root element), where a full page is at least as tall
	// as the viewport, a short page padded below with its background.
	FitContent bool
	// MaxBytes is the ceiling for the JPEG; default DefaultMaxBytes.
	MaxBytes int
	// Profile names whose shot this is (a person): shots of different
	// profiles never share cookies, storage or cache, each tab living in
	// a browser context of its own; the warm tab is kept only for the same
	// profile's next shot.
	Profile string
}

// Shot is one JPEG under the ceiling.
type Shot struct {
	JPEG []byte
	// Width, Height are the pixels of the image.
	Width, Height int
	// Quality is the JPEG quality it was encoded with.
	Quality int
	// Scale is the device scale used in the end (Capture), or the factor by
	// which the input was shrunk (Compress: 1, 0.5, 0.25, …).
	Scale float64
	// Truncated: a full page longer than 16,384 CSS pixels (at the
	// viewport's width), of which the image holds the top.
	Truncated bool
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
	// life ends with Close; it is the parent of the browser's contexts, so
	// that Close also ends the shot in progress.
	life context.Context
	end  context.CancelFunc
	// turn holds one token, taken by the shot in progress and by Close; a
	// channel so that waiting for it respects the caller's ctx.
	turn   chan struct{}
	cur    *instance // the running browser or nil; under turn
	closed bool      // under turn
}

// instance is one Chromium process.
type instance struct {
	// ctx is the chromedp context of the browser's first tab. chromedp ties
	// the process to it, and cancels it when the connection to the process
	// drops, so it is done once the browser has died.
	ctx context.Context
	// stop kills the process and waits until it and its profile directory
	// are gone; only the first call does anything (chromedp's cancel must
	// run once).
	stop func()
	// tab is the warm tab, or nil until the next shot opens one.
	tab *tab
}

// tab is a browser tab kept open for the shots to come.
type tab struct {
	ctx     context.Context // chromedp context of the tab, under the browser's
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

// New returns a Browser; Chromium starts on the first Capture.
func New(cfg Config) *Browser {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	life, end := context.WithCancel(context.Background())
	return &Browser{cfg: cfg, life: life, end: end, turn: make(chan struct{}, 1)}
}

// Close ends the shot in progress, if any, and stops Chromium. Later
// Captures fail with ErrClosed.
func (b *Browser) Close() error {
	b.end()
	b.turn <- struct{}{}
	defer func() { <-b.turn }()
	b.closed = true
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
	case <-b.life.Done():
		return Shot{}, ErrClosed
	}
	defer func() { <-b.turn }()
	if b.closed {
		return Shot{}, ErrClosed
	}
	var err error
	for range 2 {
		var inst *instance
		if inst, err = b.browser(ctx); err != nil {
			return Shot{}, err
		}
		var s Shot
		s, err = b.shoot(ctx, inst, o)
		if err == nil || inst.ctx.Err() == nil || ctx.Err() != nil || b.life.Err() != nil {
			return s, err
		}
		// The browser died under this shot: again in a fresh one.
	}
	return Shot{}, err
}

// browser returns the running browser, starting one if there is none or the
// last one died. The caller has the turn.
func (b *Browser) browser(ctx context.Context) (*instance, error) {
	if b.cur != nil {
		if b.cur.ctx.Err() == nil {
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

// launch starts Chromium with its first (blank) tab, which stays open for
// the life of the process.
func (b *Browser) launch(ctx context.Context) (*instance, error) {
	bin, err := b.bin()
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless, // also --hide-scrollbars, --mute-audio
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("no-sandbox", b.cfg.NoSandbox), // chromedp would add it as root
		// textslash's environment holds its secrets: the browser gets none.
		chromedp.NoInheritEnv,
		chromedp.Env("PATH="+os.Getenv("PATH"), "LANG=C.UTF-8"),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		// No windows opened by a page without a gesture: they would
		// outlive the shot.
		chromedp.Flag("disable-popup-blocking", false),
	)
	profile := ""
	if u := b.cfg.User; u != nil {
		// Its own profile directory, which chromedp leaves in place.
		if profile, err = os.MkdirTemp("", "textslash-chromium-"); err != nil {
			return nil, err
		}
		if err := os.Chown(profile, int(u.Uid), int(u.Gid)); err != nil {
			os.RemoveAll(profile)
			return nil, err
		}
		opts = append(opts, chromedp.UserDataDir(profile), chromedp.Env("HOME="+profile),
			chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
				cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: u}
			}))
	}
	// The browser outlives any one Capture: its contexts hang from b.life,
	// and instance.stop (or Close) ends them.
	actx, cancelAlloc := chromedp.NewExecAllocator(b.life, opts...)
	discard := func(string, ...any) {}
	bctx, cancelBrowser := chromedp.NewContext(actx,
		chromedp.WithLogf(discard), chromedp.WithErrorf(discard))
	inst := &instance{ctx: bctx, stop: sync.OnceFunc(func() {
		cancelBrowser() // kills the process, waits for it, removes the profile
		cancelAlloc()
		if profile != "" {
			os.RemoveAll(profile)
		}
	})}

	// The first Run starts the process and binds it to bctx, so it cannot
	// take a ctx with a deadline: wait for it on the side.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }()
	wait, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	select {
	case err = <-started:
	case <-wait.Done():
		inst.stop() // ends the Run
		<-started
		err = context.Cause(wait)
	}
	if err != nil {
		inst.stop()
		if b.life.Err() != nil {
			err = ErrClosed
		}
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return inst, nil
}

func (b *Browser) bin() (string, error) {
	if b.cfg.Bin != "" {
		p, err := exec.LookPath(b.cfg.Bin)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoChromium, err)
		}
		return p, nil
	}
	for _, name := range binNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: none of %v in PATH", ErrNoChromium, binNames)
}

// openTab opens the warm tab of inst for profile's shots, in a browser
// context of its own (disposed with the tab): nothing of another
// profile's pages carries over.
func (b *Browser) openTab(ctx context.Context, inst *instance, profile string) (*tab, error) {
	t := &tab{profile: profile}
	t.ctx, t.close = chromedp.NewContext(inst.ctx, chromedp.WithNewBrowserContext(), chromedp.WithNewWindow(false), chromedp.WithListener(t.event))
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	defer context.AfterFunc(ctx, t.close)()    // the first Run cannot take ctx
	if err := chromedp.Do(t.ctx); err != nil { // opens the tab
		t.close()
		return nil, err
	}
	// The browser tells of a crash even when the tab does not.
	id := chromedp.FromContext(t.ctx).Target.TargetID
	crash := &inspector.EventTargetCrashed{}
	err := chromedp.ListenBrowser(t.ctx, func(ev any) {
		if ev, ok := ev.(*target.EventTargetCrashed); ok && ev.TargetID == id {
			t.event(crash)
		}
	})
	if err == nil {
		// The page as it is now: the agent may have changed it since the
		// last shot, whatever its cache headers or service worker say.
		_, err = chromedp.Call(t.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
	}
	if err == nil {
		_, err = chromedp.Call(t.ctx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true})
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
	pctx, cancelCause := context.WithCancelCause(t.ctx)
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
// chromedp reports only the context's error.
func (b *Browser) why(ctx context.Context, inst *instance, err error) error {
	switch {
	case ctx.Err() == nil:
		return err
	case b.life.Err() != nil:
		return fmt.Errorf("%w (%w)", ErrClosed, err)
	case inst.ctx.Err() != nil:
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

// shootTab takes the shot in the tab.
func shootTab(tab context.Context, o Options) (Shot, error) {
	width, height := int64(mobileWidth), int64(mobileHeight)
	if o.Desktop {
		width, height = desktopWidth, desktopHeight
	}
	viewport := func(scale float64) chromedp.Action[chromedp.Void] {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(scale)}
		if o.Desktop {
			opts = append(opts, chromedp.EmulateLandscape)
		} else {
			opts = append(opts, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		return chromedp.EmulateViewport(width, height, opts...)
	}
	scale := ladder[0].scale
	if err := chromedp.Do(tab, viewport(scale), chromedp.Navigate(o.URL)); err != nil {
		return Shot{}, err
	}
	var clip *page.Viewport
	truncated := false
	if o.FullPage {
		var err error
		if clip, truncated, err = fullPageClip(tab, o.FitContent, float64(width), float64(height)); err != nil {
			return Shot{}, err
		}
	}
	var first int
	var sizes []int
	for i, step := range ladder {
		if i > 0 && i < len(ladder)-1 && float64(first)*step.lower > float64(o.MaxBytes) {
			continue // sure to be over
		}
		if step.scale != scale {
			scale = step.scale
			if err := chromedp.Do(tab, viewport(scale)); err != nil {
				return Shot{}, err
			}
		}
		img, err := chromedp.Run(tab, capture(clip, step.quality))
		if err != nil {
			return Shot{}, fmt.Errorf("capture: %w", err)
		}
		if i == 0 {
			first = len(img)
		}
		if len(img) > o.MaxBytes {
			sizes = append(sizes, len(img))
			continue
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(img))
		if err != nil {
			return Shot{}, fmt.Errorf("capture: %w", err)
		}
		return Shot{JPEG: img, Width: cfg.Width, Height: cfg.Height, Quality: step.quality, Scale: scale, Truncated: truncated}, nil
	}
	return Shot{}, fmt.Errorf("%w: %d bytes at best, ceiling %d (tried %v)",
		ErrTooLarge, slices.Min(sizes), o.MaxBytes, sizes)
}

// contentHeight is the height of a page's content in CSS pixels: its root
// element's, which (unlike the page's layout size) does not grow to the
// viewport's.
const contentHeight = "document.documentElement.getBoundingClientRect().height"

// fullPageClip measures the page in the tab and returns the clip of its
// full-page shot in a viewport of width×height (fullPage); with fit, the
// page is as tall as its content, however short.
func fullPageClip(tab context.Context, fit bool, width, height float64) (clip *page.Viewport, truncated bool, err error) {
	m, err := chromedp.Call(tab, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return nil, false, fmt.Errorf("page size: %w", err)
	}
	size := m.CSSContentSize
	if fit && size != nil {
		h, err := chromedp.Run(tab, chromedp.Evaluate[float64](contentHeight))
		if err != nil {
			return nil, false, fmt.Errorf("content height: %w", err)
		}
		fitted := *size
		fitted.Height, size = max(math.Ceil(h), 1), &fitted
		height = 1
	}
	clip, truncated = fullPage(size, width, height)
	return clip, truncated, nil
}

// fullPage is the clip of a full-page shot of a page of the given size (CSS
// pixels) in a viewport of width×height (height: the least the shot
// takes): a page wider than the viewport is shrunk to its width, as a
// phone shows a page made for desktops, and the image is cut at
// maxFullHeight; truncated says so.
func fullPage(size *dom.Rect, width, height float64) (clip *page.Viewport, truncated bool) {
	w, h := width, height
	if size != nil {
		w, h = max(w, math.Ceil(size.Width)), max(h, math.Ceil(size.Height))
	}
	scale := width / w
	if h*scale > maxFullHeight {
		h, truncated = math.Floor(maxFullHeight/scale), true
	}
	return &page.Viewport{Width: w, Height: h, Scale: scale}, truncated
}

// capture is a JPEG of the viewport or, with a clip, of that part of the
// page (beyond the viewport).
func capture(clip *page.Viewport, quality int) chromedp.Action[[]byte] {
	return func(ctx context.Context, t *chromedp.Target) ([]byte, error) {
		q, yes := int64(quality), true
		p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: &q, FromSurface: &yes}
		if clip != nil {
			p.Clip, p.CaptureBeyondViewport = clip, &yes
		}
		r, err := cdp.Call(ctx, t, page.CaptureScreenshot, p)
		return r.Data, err
	}
}

// Starting Chromium: which binary, its flags, the user it runs as and
// that user's profile directory.

package pageshot

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

// launchTimeout bounds the start of Chromium (about 0.5 s when warm
// on disk).
const launchTimeout = 30 * time.Second

// binNames are looked up in PATH when Config.Bin is empty. The headless
// shell (Debian's chromium-headless-shell) comes first: Chromium without
// the browser's UI, built for automation, it takes a phone shot for about a
// quarter of the CPU of the full browser in headless mode. Debian's
// /usr/bin/chromium-headless-shell is a script that does not exec the
// browser, so that a browser that dies would leave the script waiting and
// one that is killed would leave the browser running: the binary itself
// comes first.
var binNames = []string{"/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"}

// launch starts Chromium with its first (blank) tab, which stays open for
// the life of the process. It returns the browser's chromedp context
// (chromedp's handle on the browser, what chromedp.Do and the next
// chromedp.NewContext take; chromedp cancels it when the connection to the
// process drops, so it is done once the browser has died) and stop, which
// kills the process and waits until it and its profile directory are gone
// (only the first call does anything: chromedp's cancel must run once).
func (b *Browser) launch(ctx context.Context) (context.Context, func(), error) {
	bin, err := b.bin()
	if err != nil {
		return nil, nil, err
	}
	opts, profile, err := b.options(bin)
	if err != nil {
		return nil, nil, err
	}
	// The browser outlives any one Capture: its contexts hang from
	// context.Background(), and stop (or Close) ends them.
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	discard := func(string, ...any) {}
	bctx, cancelBrowser := chromedp.NewContext(actx,
		chromedp.WithLogf(discard), chromedp.WithErrorf(discard))
	stop := sync.OnceFunc(func() {
		cancelBrowser() // kills the process, waits for it, removes the profile
		cancelAlloc()
		if profile != "" {
			os.RemoveAll(profile)
		}
	})
	// Close ends the allocator's context, as the cancel of a parent would:
	// every context of the browser ends at once, the shot in progress with
	// them, and the allocator kills the process (the owner then stops the
	// browser). The watch ends with the browser.
	go func() {
		select {
		case <-b.closing:
			cancelAlloc()
		case <-bctx.Done():
		}
	}()

	// The first Run starts the process and binds it to bctx, so it cannot
	// take a ctx with a deadline: wait for it on the side.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }()
	wait, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	select {
	case err = <-started:
	case <-wait.Done():
		stop() // ends the Run
		<-started
		err = context.Cause(wait)
	}
	if err != nil {
		stop()
		if b.isClosed() {
			err = ErrClosed
		}
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return bctx, stop, nil
}

// browserPID is the process id of the browser of bctx, or 0.
func browserPID(bctx context.Context) int {
	if p := chromedp.FromContext(bctx).Browser.Process(); p != nil {
		return p.Pid
	}
	return 0
}

// options are Chromium's flags for bin; with Config.User, also the user it
// runs as and that user's profile directory (made here, removed by
// launch's stop; "" without a user).
func (b *Browser) options(bin string) (opts []chromedp.ExecAllocatorOption, profile string, err error) {
	opts = append(chromedp.DefaultExecAllocatorOptions[:],
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
	u := b.cfg.User
	if u == nil {
		return opts, "", nil
	}
	// Its own profile directory, which chromedp leaves in place.
	if profile, err = os.MkdirTemp("", "textslash-chromium-"); err != nil {
		return nil, "", err
	}
	if err := os.Chown(profile, int(u.Uid), int(u.Gid)); err != nil {
		os.RemoveAll(profile)
		return nil, "", err
	}
	opts = append(opts, chromedp.UserDataDir(profile), chromedp.Env("HOME="+profile),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: u}
		}))
	return opts, profile, nil
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

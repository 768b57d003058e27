package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// openPhone opens the web chat at a phone's size (390 px wide).
func openPhone(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
	); err != nil {
		t.Fatalf("open the page: %v", err)
	}
}

// eventPublisher connects to inst's NATS and returns how to publish an
// event of the web chat user u, as the services would.
func eventPublisher(ctx context.Context, t *testing.T, inst *instance) (sent <-chan contract.Inbound, publish func(u contract.User, ev contract.Event, part string)) {
	t.Helper()
	nc, err := nats.Connect(inst.adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return inbounds(t, nc), func(u contract.User, ev contract.Event, part string) {
		t.Helper()
		ev.User = u
		if err := bus.PublishEvent(ctx, js, ev, contract.MsgID(u, ev.JobID, string(ev.Kind), part)); err != nil {
			t.Fatal(err)
		}
	}
}

// A long reply (`seq 1 30000`: 169 KB, cut to the 128 KB an event holds)
// folds: the bubble fits on the phone's screen, "Show all" shows the whole
// text, and "Download" saves all of it.
func TestWebChatFoldsLongReplyInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	downloads := t.TempDir()
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads}); err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	openPhone(ctx, t, inst.URL)
	sendInPage(ctx, t, "seq 1 30000")
	waitPage(ctx, t, replyHas, "1\n2\n3\n", "the reply of seq")

	height, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
		`document.querySelector('#messages .reply').getBoundingClientRect().height`))
	if err != nil {
		t.Fatal(err)
	}
	if height > 844 {
		t.Errorf("the reply is %.0f px high; want it folded to fit the 844 px screen", height)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#messages .reply button.show-all`))); err != nil {
		t.Fatalf("press Show all: %v", err)
	}
	const whole = `(want) => document.querySelector('#messages .reply .text').textContent.includes(want)`
	waitPage(ctx, t, whole, "\n20000\n", "the whole reply after Show all")
	waitPage(ctx, t, whole, "[Reply cut: the agent wrote", "the whole reply after Show all, to its end")
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#messages .reply .text').innerText`))
	if err != nil {
		t.Fatal(err)
	}

	// The download is the whole text as the agent wrote it (its Markdown,
	// which the page renders): the words shown, its own line breaks kept.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#messages .reply a.download`))); err != nil {
		t.Fatalf("press Download: %v", err)
	}
	file := filepath.Join(downloads, "reply.txt")
	natstest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if got, want := strings.Join(strings.Fields(string(data)), " "), strings.Join(strings.Fields(shown), " "); got != want {
			return fmt.Errorf("downloaded %d bytes, %d words; want the %d words shown", len(data), len(strings.Fields(got)), len(strings.Fields(want)))
		}
		if !strings.HasPrefix(string(data), "1\n2\n3\n") || !strings.Contains(string(data), "\n\n[Reply cut: the agent wrote") {
			return fmt.Errorf("downloaded %q…%q; want the reply's lines as written", data[:min(len(data), 20)], tail(string(data), 80))
		}
		return nil
	})
}

// orderOf is the index, among the chat's bubbles and notices in the order
// the page shows them, of the first whose text includes the argument.
const orderOf = `(want) => [...document.querySelectorAll('#messages .bubble, #messages .notice')].findIndex(e => e.innerText.includes(want))`

// Claude's final reply after a question shows below the answer (the
// person's Yes and textslash's "Allowed"), as the events came: the page
// must not put it back into its run's group, above them.
func TestWebChatAnswerAboveFinalReplyInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	inst := startServe(t, `TEXTSLASH_AGENT=read -r m; echo "got $m"`)
	sent, publish := eventPublisher(ctx, t, inst)
	openPhone(ctx, t, inst.URL)
	sendInPage(ctx, t, "hello")
	u := nextInbound(t, sent, "typed hello").User
	waitPage(ctx, t, replyHas, "got hello", "reply to hello")

	// A run asks, as Claude's does; the person presses Yes.
	publish(u, contract.Event{Kind: contract.KindStarted, JobID: "run-1", Text: "touch x"}, "")
	publish(u, contract.Event{Kind: contract.KindProgress, JobID: "run-1", Text: "Asking to run touch x"}, "1")
	publish(u, contract.Event{Kind: contract.KindQuestion, JobID: "run-1", Question: 1,
		Text: "Claude wants to run `touch x`.", Choices: []string{"yes", "no", "always"}}, "1")
	waitChoices(ctx, t, "run-1", "Yes+ No+ Always+")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.job[data-job="run-1"] .choices button[data-choice="yes"]`))); err != nil {
		t.Fatalf("press Yes: %v", err)
	}
	yes := nextInbound(t, sent, "the Yes button").ID
	// The events as NATS holds them: the dispatcher's notice about the
	// answer, then the run's next step and its end.
	publish(u, contract.Event{Kind: contract.KindNotice, JobID: yes, Text: "Allowed. Claude goes on."}, "in:2")
	publish(u, contract.Event{Kind: contract.KindProgress, JobID: "run-1", Text: "Ran touch x"}, "2")
	publish(u, contract.Event{Kind: contract.KindDone, JobID: "run-1", Status: contract.StatusOK, Text: "Created x."}, "")
	waitPage(ctx, t, replyHas, "Created x.", "the final reply")

	order := map[string]int{}
	for _, want := range []string{"Claude wants to run", "Allowed. Claude goes on.", "Created x."} {
		i, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(`+orderOf+`)(`+jsString(want)+`)`))
		if err != nil {
			t.Fatal(err)
		}
		order[want] = i
	}
	yesAt, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`[...document.querySelectorAll('#messages .bubble, #messages .notice')].findIndex(e => e.classList.contains('mine') && e.innerText.trim() === 'yes')`))
	if err != nil {
		t.Fatal(err)
	}
	q, allowed, final := order["Claude wants to run"], order["Allowed. Claude goes on."], order["Created x."]
	if !(q < yesAt && yesAt < allowed && allowed < final) {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('messages').innerText`))
		t.Errorf("shown in the order question %d, yes %d, Allowed %d, final reply %d; want them in that order; the chat shows:\n%s",
			q, yesAt, allowed, final, text)
	}
}

// A run's cost shows once: the reply's own line (TEXTSLASH_SHOW_COST),
// not again in the bubble's footer.
func TestWebChatCostOnceInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	inst := startServe(t, `TEXTSLASH_AGENT=read -r m; echo "got $m"`)
	sent, publish := eventPublisher(ctx, t, inst)
	openPhone(ctx, t, inst.URL)
	sendInPage(ctx, t, "hello")
	u := nextInbound(t, sent, "typed hello").User
	waitPage(ctx, t, replyHas, "got hello", "reply to hello")

	publish(u, contract.Event{Kind: contract.KindDone, JobID: "run-1", Status: contract.StatusOK, DurationMS: 2500,
		CostUSD: 0.0022, InputTokens: 20, OutputTokens: 10,
		Text: "Done.\n(This run: $0.0022, 20 tokens in, 10 out.)"}, "")
	waitPage(ctx, t, replyHas, "Done.", "the reply with its cost")
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`[...document.querySelectorAll('#messages .reply')].find(e => e.innerText.includes('Done.')).innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text, "$0.0022"); n != 1 {
		t.Errorf("the reply shows its cost %d times: %q; want once", n, text)
	}
}

// A cancelled run says so once, in textslash's "Cancelled.": not
// "[exit 143]" (the signal that stopped it), nor a "canceled" and an exit
// code under its reply; a run that had printed shows what it printed after
// "Stopped.", one that had not shows no reply at all.
func TestWebChatCancelSaysItOnceInBrowser(t *testing.T) {
	for _, tc := range []struct {
		name, run string
		want, not []string
	}{
		{"after output", "echo started; touch .printed; sleep 100", []string{"Stopped.", "started"}, []string{"exit 143"}},
		{"before output", "sleep 100", nil, []string{"exit 143", "Stopped", "(no output)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := browser(t, 90*time.Second) // first: skips without Chromium
			inst := startServe(t, "TEXTSLASH_AGENT=shell")
			openPhone(ctx, t, inst.URL)
			sendInPage(ctx, t, tc.run)
			waitPage(ctx, t, `(want) => document.getElementById('state').className === want`, contract.StateWorking, "the run working")
			if strings.Contains(tc.run, ".printed") {
				// "working" is the job's, published before its run starts:
				// the cancel must come once the run has printed.
				natstest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
					if m, _ := filepath.Glob(filepath.Join(inst.Data, "workspaces", "web.*", ".printed")); len(m) == 0 {
						return errors.New("the run has not printed yet")
					}
					return nil
				})
			}
			sendInPage(ctx, t, "cancel")
			waitPage(ctx, t, `(want) => document.getElementById('state').className === want`, contract.StateIdle, "idle again")
			// Events come in order: once the next run's reply shows, the
			// cancelled run's end has been shown too, if it is at all.
			sendInPage(ctx, t, "echo after")
			waitPage(ctx, t, `() => [...document.querySelectorAll('#messages .reply')].some(r => r.innerText.includes('after'))`, "", "the next reply")

			text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('messages').innerText`))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the chat does not show %q after a cancel:\n%s", w, text)
				}
			}
			for _, no := range tc.not {
				if strings.Contains(text, no) {
					t.Errorf("the chat shows %q after a cancel:\n%s", no, text)
				}
			}
			if n := strings.Count(strings.ToLower(text), "cancel"); n != 2 { // the person's "cancel", textslash's "Cancelled."
				t.Errorf("the chat says cancel %d times; want the person's and textslash's answer:\n%s", n, text)
			}
		})
	}
}

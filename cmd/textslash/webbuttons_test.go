package main

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// choicesOf describes the choice buttons under the events of job (its
// argument): each button's label, "+" when it can be pressed or "-" when
// disabled, and "*" when it is the one chosen; space-separated.
const choicesOf = `(job) => [...document.querySelectorAll('#messages .job')]
  .filter(j => j.dataset.job === job)
  .flatMap(j => [...j.querySelectorAll('.choices button')])
  .map(b => b.innerText + (b.disabled ? '-' : '+') + (b.classList.contains('chosen') ? '*' : ''))
  .join(' ')`

// waitChoices waits until the buttons of job read want (see choicesOf).
func waitChoices(ctx context.Context, t *testing.T, job, want string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.PollFunction[bool](`(job, want) => (`+choicesOf+`)(job) === want`,
		chromedp.WithPollingArgs(job, want),
		chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(20*time.Second), // the tab still answers after it
	))
	if err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(`+choicesOf+`)(`+jsString(job)+`)`))
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('messages').innerText`))
		t.Fatalf("buttons of %s: got %q; want %q (%v); the chat shows:\n%s", job, got, want, err, text)
	}
}

// jsString quotes s for JavaScript (job ids are letters, digits, - and _).
func jsString(s string) string { return "'" + s + "'" }

// inbounds is every message people send, as ingress publishes them.
func inbounds(t *testing.T, nc *nats.Conn) <-chan contract.Inbound {
	t.Helper()
	ch := make(chan contract.Inbound, 64)
	if _, err := nc.Subscribe(contract.InboundSubject(contract.User{Channel: contract.ChannelWeb, ID: "*"}), func(m *nats.Msg) {
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err == nil {
			ch <- in
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// nextInbound waits for the next message sent.
func nextInbound(t *testing.T, ch <-chan contract.Inbound, what string) contract.Inbound {
	t.Helper()
	select {
	case in := <-ch:
		return in
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no message sent in 20s", what)
		return contract.Inbound{}
	}
}

// The web chat shows an event's choices (a question's yes / no / always,
// an approval's approve / reject) as buttons: a press sends the choice as
// the person's message, the way typing it does, and ends those buttons;
// replayed from history, only the latest event's buttons can be pressed,
// and the one chosen stays marked.
func TestWebButtonsInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	// An agent that answers every message harmlessly, "yes" included.
	inst := startServe(t, `TEXTSLASH_AGENT=read -r m; echo "got $m"`)
	nc, err := nats.Connect(inst.adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sent := inbounds(t, nc)

	// A typed message: its reply, and the page's session (its user).
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "hello"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("open the page and send: %v", err)
	}
	u := nextInbound(t, sent, "typed hello").User
	waitPage(ctx, t, replyHas, "got hello", "reply to the typed message")

	publish := func(ev contract.Event, part string) {
		t.Helper()
		ev.User = u
		if err := bus.PublishEvent(ctx, js, ev, contract.MsgID(u, ev.JobID, string(ev.Kind), part)); err != nil {
			t.Fatal(err)
		}
	}

	// A question: one button per choice, capitalised; a press sends it.
	publish(contract.Event{Kind: contract.KindQuestion, JobID: "ask-1", Question: 1,
		Text: "May the agent run `make`?", Choices: []string{"yes", "no", "always"}}, "1")
	waitChoices(ctx, t, "ask-1", "Yes+ No+ Always+")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.job[data-job="ask-1"] .choices button[data-choice="yes"]`))); err != nil {
		t.Fatalf("press Yes: %v", err)
	}
	if in := nextInbound(t, sent, "the Yes button"); in.Text != "yes" || in.User != u {
		t.Fatalf("the Yes button sent %q from %s; want %q from %s", in.Text, in.User.Key(), "yes", u.Key())
	}
	waitChoices(ctx, t, "ask-1", "Yes-* No- Always-")
	waitPage(ctx, t, mineHas, "yes", "own bubble with the choice")
	waitPage(ctx, t, replyHas, "got yes", "reply to the choice")

	// An approval request: its buttons are the live ones now.
	publish(contract.Event{Kind: contract.KindDone, JobID: "ask-2", Status: contract.StatusOK, Approval: true,
		Text: "Changed 1 file.", Choices: []string{"approve", "reject"}}, "")
	waitChoices(ctx, t, "ask-2", "Approve+ Reject+")
	waitChoices(ctx, t, "ask-1", "Yes-* No- Always-")

	// Replayed from history: the question's buttons stay ended, the choice
	// marked; the latest event's can still be pressed.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("input"))); err != nil {
		t.Fatalf("reload: %v", err)
	}
	waitChoices(ctx, t, "ask-2", "Approve+ Reject+")
	waitChoices(ctx, t, "ask-1", "Yes-* No- Always-")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.job[data-job="ask-2"] .choices button[data-choice="reject"]`))); err != nil {
		t.Fatalf("press Reject: %v", err)
	}
	if in := nextInbound(t, sent, "the Reject button"); in.Text != "reject" {
		t.Fatalf("the Reject button sent %q; want %q", in.Text, "reject")
	}
	waitChoices(ctx, t, "ask-2", "Approve- Reject-*")

	// Typed replies still work beside the buttons.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("input"), "typed"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("send typed: %v", err)
	}
	if in := nextInbound(t, sent, "typed"); in.Text != "typed" {
		t.Fatalf("typed %q; want %q", in.Text, "typed")
	}
	waitPage(ctx, t, replyHas, "got typed", "reply to the typed message after the buttons")
}

// A run that leaves changes for approval ends with Approve and Reject
// buttons; a press answers the approval request as typing reject does.
func TestWebButtonsApprovalInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	inst := startServe(t, `TEXTSLASH_AGENT=read -r m; echo "got $m"; echo "::approval::"`)
	nc, err := nats.Connect(inst.adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sent := inbounds(t, nc)

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "change it"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("open the page and send: %v", err)
	}
	job := nextInbound(t, sent, "typed change it").ID
	waitChoices(ctx, t, job, "Approve+ Reject+")
	waitPage(ctx, t, `(want) => document.getElementById('state').className === want`, contract.StateAwaitingApproval,
		"the state awaiting approval")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.job[data-job="`+job+`"] .choices button[data-choice="reject"]`))); err != nil {
		t.Fatalf("press Reject: %v", err)
	}
	if in := nextInbound(t, sent, "the Reject button"); in.Text != "reject" {
		t.Fatalf("the Reject button sent %q; want %q", in.Text, "reject")
	}
	waitChoices(ctx, t, job, "Approve- Reject-*")
	waitPage(ctx, t, `(want) => [...document.querySelectorAll('#messages .notice')].some(e => e.innerText.includes(want))`,
		"Rejected.", "the dispatcher's answer to the rejection")
}

// A reply's preview links show under it as links that open in a new tab,
// with no referrer; a link that is not http or https is not shown.
func TestWebPreviewLinkInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	inst := startServe(t, `TEXTSLASH_AGENT=read -r m; echo "got $m"`)
	nc, err := nats.Connect(inst.adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sent := inbounds(t, nc)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")), chromedp.SendKeys(chromedp.ID("input"), "hello"), chromedp.Click(chromedp.ID("send"))); err != nil {
		t.Fatalf("open the page and send: %v", err)
	}
	u := nextInbound(t, sent, "typed hello").User
	link := "http://abcdef.preview.localhost:3001/"
	ev := contract.Event{Kind: contract.KindDone, User: u, JobID: "pv-1", Status: contract.StatusOK, Text: "Your app on port 5173: " + link,
		Links: []contract.Link{{URL: link, Label: "Open port 5173"}, {URL: "javascript:alert(1)", Label: "Evil"}}}
	if err := bus.PublishEvent(ctx, js, ev, contract.MsgID(u, ev.JobID, string(ev.Kind), "")); err != nil {
		t.Fatal(err)
	}
	waitPage(ctx, t, `(want) => [...document.querySelectorAll('#messages a.link')]
		.map(a => a.innerText + ' ' + a.href + ' ' + a.target + ' ' + a.rel).join('|') === want`,
		"Open port 5173 "+link+" _blank noopener noreferrer", "the preview link, opening in a new tab")
}

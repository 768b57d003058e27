package egress_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/textslash/textslash/channels/telegram"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/telegramtest"
)

var carol = contract.User{Channel: contract.ChannelTelegram, ID: "4242"}

type tgHarness struct {
	t    *testing.T
	js   jetstream.JetStream
	api  *telegramtest.API
	n    int
	logs natstest.Logs
}

// startTelegram runs egress for Telegram against the fake Bot API. Images
// are served by a stand-in for the media service, which checks their
// signature: public when upload is false (the fake fetches them as
// Telegram does), local otherwise (egress uploads them).
func startTelegram(t *testing.T, upload bool) *tgHarness {
	t.Helper()
	return startTelegramRules(t, upload, channel.Rules{ProgressEvery: 100 * time.Millisecond, TypingEvery: typingEvery})
}

// typingEvery is how often the harness's egress shows "typing…" again.
const typingEvery = 50 * time.Millisecond

// startTelegramRules is startTelegram with the channel's rules.
func startTelegramRules(t *testing.T, upload bool, rules channel.Rules) *tgHarness {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := signer.Check(r.URL.Path, r.URL.Query().Get("e"), r.URL.Query().Get("s"), time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/files/") {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			fmt.Fprint(w, csvData)
			return
		}
		w.Header().Set("Content-Type", "image/jpeg")
		fmt.Fprint(w, "\xff\xd8\xff\xe0 a jpeg")
	}))
	t.Cleanup(media.Close)
	h := &tgHarness{t: t, js: ns.JS, api: telegramtest.NewAPI(t)}
	cfg := telegram.Config{BotToken: telegramtest.Token, APIURL: h.api.URL, Allowed: []string{carol.ID},
		Retry: channel.Retry{Attempts: 4, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		Rules: rules}
	if upload {
		cfg.LocalURL = media.URL
	} else {
		cfg.PublicURL = media.URL
	}
	log := testLog(t).Output(io.MultiWriter(&h.logs, testWriter(t)))
	tg, err := telegram.New(cfg, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	e, err := egress.New(egress.Config{Channels: []channel.Channel{tg}, Signer: signer}, h.js, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("egress: %v", err)
		}
	})
	return h
}

func (h *tgHarness) publish(ev contract.Event) {
	h.t.Helper()
	h.n++
	if ev.User == (contract.User{}) {
		ev.User = carol
	}
	if ev.JobID == "" {
		ev.JobID = fmt.Sprintf("m%d", h.n)
	}
	if err := bus.PublishEvent(h.t.Context(), h.js, ev, fmt.Sprintf("test-%d", h.n)); err != nil {
		h.t.Fatal(err)
	}
}

// callsNoMore checks that the fake gets no call beyond n for 300 ms.
func (h *tgHarness) callsNoMore(n int) {
	h.t.Helper()
	noMore(h.t, n, "calls", func() []string { return methods(h.api.Calls()) })
}

func methods(calls []telegramtest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}

var images = []contract.Image{{ID: "a1", ContentType: "image/jpeg", Size: 10}, {ID: "a2", ContentType: "image/jpeg", Size: 10}, {ID: "a3", ContentType: "image/jpeg", Size: 10}}

// A reply with one image is a photo with its caption; with three, a media
// group; by link (Telegram fetches the signed link) or uploaded.
func TestTelegramReplies(t *testing.T) {
	for _, upload := range []bool{false, true} {
		t.Run(fmt.Sprintf("upload=%t", upload), func(t *testing.T) {
			h := startTelegram(t, upload)
			h.publish(contract.Event{Kind: contract.KindDone, Text: "hi", Status: contract.StatusOK})
			h.publish(contract.Event{Kind: contract.KindDone, Text: "one shot", Images: images[:1], Status: contract.StatusOK})
			h.publish(contract.Event{Kind: contract.KindDone, Text: "three shots", Images: images, Status: contract.StatusOK})
			calls := h.api.WaitCalls(t, 3, 5*time.Second)
			if got := methods(calls); !slices.Equal(got, []string{"sendMessage", "sendPhoto", "sendMediaGroup"}) {
				t.Fatalf("methods %q", got)
			}
			for i, want := range []struct {
				text   string
				photos int
			}{{"hi", 0}, {"one shot", 1}, {"three shots", 3}} {
				c := calls[i]
				if c.ChatID != carol.ID || c.Text != want.text || len(c.Photos) != want.photos {
					t.Errorf("call %d: %+v; want chat %s, text %q, %d photos", i, c, carol.ID, want.text, want.photos)
				}
				for _, p := range c.Photos {
					if upload != strings.HasPrefix(p, "upload:") {
						t.Errorf("call %d: photo %q; want it uploaded: %t", i, p, upload)
					}
				}
			}
		})
	}
}

// A long reply is paged at 4,096 characters; "more" sends the next page. A
// caption too long for a photo goes first, on its own.
func TestTelegramPaging(t *testing.T) {
	h := startTelegram(t, false)
	long := strings.Repeat("Ünïcödé line 👍🏽\n", 400) // ~7,200 characters
	h.publish(contract.Event{Kind: contract.KindDone, Text: long, Status: contract.StatusOK})
	first := h.api.WaitCalls(t, 1, 5*time.Second)[0]
	if !strings.HasSuffix(first.Text, "Reply MORE for the rest (page 1/2)") {
		t.Fatalf("first page ends %q", first.Text[max(0, len(first.Text)-60):])
	}
	h.publish(contract.Event{Kind: contract.KindMore})
	second := h.api.WaitCalls(t, 2, 5*time.Second)[1]
	if !strings.HasSuffix(second.Text, "(page 2/2)") {
		t.Errorf("second page ends %q", second.Text[max(0, len(second.Text)-30):])
	}
	var whole strings.Builder
	for _, page := range []string{first.Text, second.Text} {
		if n := utf8.RuneCountInString(page); n > 4096 || !utf8.ValidString(page) {
			t.Errorf("page of %d characters (valid UTF-8: %t); want at most 4,096", n, utf8.ValidString(page))
		}
		body, _, _ := strings.Cut(page, "Reply MORE")
		body, _, _ = strings.Cut(body, "(page 2/2)")
		whole.WriteString(body)
	}
	if got, want := strings.Join(strings.Fields(whole.String()), " "), strings.Join(strings.Fields(long), " "); got != want {
		t.Errorf("pages put together differ from the reply (%d characters; want %d)", utf8.RuneCountInString(got), utf8.RuneCountInString(want))
	}
	h.publish(contract.Event{Kind: contract.KindDone, Text: strings.Repeat("x", 1500), Images: images[:1], Status: contract.StatusOK})
	calls := h.api.WaitCalls(t, 4, 5*time.Second)
	if got := methods(calls[2:]); !slices.Equal(got, []string{"sendMessage", "sendPhoto"}) || calls[3].Text != "" {
		t.Errorf("1,500-character caption: %q, photo caption %q; want the text, then the photo alone", got, calls[3].Text)
	}
}

// Progress edits one status message per run.
func TestTelegramProgressEdits(t *testing.T) {
	h := startTelegram(t, false)
	for _, line := range []string{"Running npm test", "Editing src/app.ts", "Editing src/app.ts", "Running git diff"} {
		h.publish(contract.Event{Kind: contract.KindProgress, JobID: "job1", Text: line})
		// A real wait: progress goes out at most once per 100 ms
		// (ProgressEvery), and each line is to be shown, not coalesced.
		time.Sleep(300 * time.Millisecond)
	}
	h.publish(contract.Event{Kind: contract.KindProgress, JobID: "job2", Text: "Running ls"})
	calls := h.api.WaitCalls(t, 4, 10*time.Second)
	if got := methods(calls); !slices.Equal(got, []string{"sendMessage", "editMessageText", "editMessageText", "sendMessage"}) {
		t.Fatalf("methods %q", got)
	}
	if calls[1].MessageID != calls[0].MessageID || calls[2].MessageID != calls[0].MessageID || calls[2].Text != "Running git diff" {
		t.Errorf("edits %+v; want the first message edited to the latest line", calls[1:3])
	}
	if calls[3].MessageID == calls[0].MessageID {
		t.Errorf("the next run edited the last run's status message")
	}
}

// 429 waits the retry_after Telegram asks for; a request Telegram refuses
// (403: the person blocked the bot) becomes a dead letter at once.
func TestTelegramFailures(t *testing.T) {
	h := startTelegram(t, false)
	h.api.FailNext(1, http.StatusTooManyRequests, 1)
	start := time.Now()
	h.publish(contract.Event{Kind: contract.KindDone, Text: "after the wait", Status: contract.StatusOK})
	c := h.api.WaitCalls(t, 1, 5*time.Second)[0]
	if waited := c.At.Sub(start); c.Text != "after the wait" || waited < time.Second {
		t.Errorf("sent %q after %v; want it after retry_after (1 s)", c.Text, waited)
	}
	h.api.FailNext(1, http.StatusForbidden, 0)
	h.publish(contract.Event{Kind: contract.KindDone, Text: "blocked", Status: contract.StatusOK})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "next", Status: contract.StatusOK})
	calls := h.api.WaitCalls(t, 2, 5*time.Second)
	if calls[1].Text != "next" || h.api.Attempts() != 4 {
		t.Errorf("after a 403: %q, %d attempts; want the next message, 4 attempts (no retry)", calls[1].Text, h.api.Attempts())
	}
}

// Eleven images: an album of ten with the text, then the eleventh alone.
func TestTelegramElevenImages(t *testing.T) {
	h := startTelegram(t, false)
	var eleven []contract.Image
	for i := range 11 {
		eleven = append(eleven, contract.Image{ID: fmt.Sprintf("b%d", i), ContentType: "image/jpeg", Size: 10})
	}
	h.publish(contract.Event{Kind: contract.KindDone, Text: "eleven shots", Images: eleven, Status: contract.StatusOK})
	calls := h.api.WaitCalls(t, 2, 5*time.Second)
	if got := methods(calls); !slices.Equal(got, []string{"sendMediaGroup", "sendPhoto"}) {
		t.Fatalf("methods %q; want an album, then a photo", got)
	}
	if len(calls[0].Photos) != 10 || calls[0].Text != "eleven shots" || len(calls[1].Photos) != 1 {
		t.Errorf("album of %d with %q, then %d photo(s); want 10 with the text, then 1", len(calls[0].Photos), calls[0].Text, len(calls[1].Photos))
	}
	h.callsNoMore(2)
}

// The replies that answer a message come as its buttons, one row of one
// per reply, each sending its reply: under a question, under an approval
// request's text or photo. An album cannot carry buttons: a message
// asking for the reply follows it with them.
func TestTelegramChoices(t *testing.T) {
	h := startTelegram(t, false)
	answers := []string{"yes", "no", "always"}
	approval := []string{contract.ActionApprove, contract.ActionReject}
	h.publish(contract.Event{Kind: contract.KindQuestion, Text: "May I run `rm -rf build`?", Question: 1, Choices: answers})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "Changed 2 files. Reply approve or reject.", Status: contract.StatusOK, Approval: true, Choices: approval})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "the diff", Images: images[:1], Status: contract.StatusOK, Approval: true, Choices: approval})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "three diffs", Images: images, Status: contract.StatusOK, Approval: true, Choices: approval})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "no choices", Status: contract.StatusOK})
	yesNo := [][]telegramtest.Button{{{Text: "Yes", Data: "yes"}, {Text: "No", Data: "no"}, {Text: "Always", Data: "always"}}}
	approveReject := [][]telegramtest.Button{{{Text: "Approve", Data: "approve"}, {Text: "Reject", Data: "reject"}}}
	want := []struct {
		method, text string
		keyboard     [][]telegramtest.Button
	}{
		{"sendMessage", "May I run `rm -rf build`?", yesNo},
		{"sendMessage", "Changed 2 files. Reply approve or reject.", approveReject},
		{"sendPhoto", "the diff", approveReject},
		{"sendMediaGroup", "three diffs", nil},
		{"sendMessage", "Approve or reject?", approveReject},
		{"sendMessage", "no choices", nil},
	}
	calls := h.api.WaitCalls(t, len(want), 5*time.Second)
	for i, w := range want {
		if c := calls[i]; c.Method != w.method || c.Text != w.text || !reflect.DeepEqual(c.Keyboard, w.keyboard) {
			t.Errorf("call %d: %s %q with keyboard %v; want %s %q with %v", i, c.Method, c.Text, c.Keyboard, w.method, w.text, w.keyboard)
		}
	}
}

// typing returns the chat actions shown in chat.
func (h *tgHarness) typing(chat string) []telegramtest.ChatAction {
	var out []telegramtest.ChatAction
	for _, a := range h.api.ChatActions() {
		if a.ChatID == chat {
			out = append(out, a)
		}
	}
	return out
}

// typingAtLeast waits until chat was shown "typing…" n times in all.
func (h *tgHarness) typingAtLeast(chat string, n int) {
	h.t.Helper()
	natstest.CheckFor(h.t, 5*time.Second, 10*time.Millisecond, func() error {
		acts := h.typing(chat)
		for _, a := range acts {
			if a.Action != "typing" {
				h.t.Fatalf("chat action %+v; want typing", a)
			}
		}
		if len(acts) < n {
			return fmt.Errorf("%d typing calls to %s; want %d", len(acts), chat, n)
		}
		return nil
	})
}

// typingStops waits until chat's typing indicator stopped (no call in 3
// TypingEvery: one in flight when it was stopped may still land), then
// checks that no call comes for 300 ms.
func (h *tgHarness) typingStops(chat string) {
	h.t.Helper()
	var n int
	natstest.CheckFor(h.t, 5*time.Second, 10*time.Millisecond, func() error {
		acts := h.typing(chat)
		if n = len(acts); n > 0 {
			if ago := time.Since(acts[n-1].At); ago < 3*typingEvery {
				return fmt.Errorf("typing goes on: %d calls, the last %v ago", n, ago)
			}
		}
		return nil
	})
	natstest.HoldsUntil(h.t, time.Now().Add(300*time.Millisecond), func() error {
		if got := len(h.typing(chat)); got != n {
			return fmt.Errorf("typing went on: %d calls, then %d", n, got)
		}
		return nil
	})
}

// While a run works its chat shows "typing…", shown again every
// TypingEvery: from its start until a question, which waits for the
// person, from the answer until its end. A chat nobody allowed is shown
// nothing.
func TestTelegramTyping(t *testing.T) {
	h := startTelegram(t, false)
	stranger := contract.User{Channel: contract.ChannelTelegram, ID: "999"}
	h.publish(contract.Event{Kind: contract.KindStarted, User: stranger, JobID: "s1", At: time.Now()})
	waitLog(t, &h.logs, 1)

	h.publish(contract.Event{Kind: contract.KindStarted, JobID: "job1", At: time.Now()})
	h.typingAtLeast(carol.ID, 3)

	h.publish(contract.Event{Kind: contract.KindQuestion, JobID: "job1", Text: "May I run `ls`?", Question: 1, Choices: []string{"yes", "no"}, At: time.Now()})
	h.api.WaitCalls(t, 1, 5*time.Second)
	h.typingStops(carol.ID)

	before := len(h.typing(carol.ID))
	h.publish(contract.Event{Kind: contract.KindAnswer, JobID: "job1", Question: 1, Text: "yes", At: time.Now()})
	h.typingAtLeast(carol.ID, before+3)

	h.publish(contract.Event{Kind: contract.KindDone, JobID: "job1", Text: "done", Status: contract.StatusOK, At: time.Now()})
	if calls := h.api.WaitCalls(t, 2, 5*time.Second); calls[1].Text != "done" {
		t.Fatalf("calls %+v; want the question, then the reply", calls)
	}
	h.typingStops(carol.ID)

	if got := h.typing(stranger.ID); len(got) != 0 {
		t.Errorf("typing shown to a chat nobody allowed: %+v", got)
	}
}

// By default "typing…" is shown again every 4 s, before Telegram's 5 s
// run out: once at the start, and not again within 300 ms.
func TestTelegramTypingByDefault(t *testing.T) {
	h := startTelegramRules(t, false, channel.Rules{})
	h.publish(contract.Event{Kind: contract.KindStarted, JobID: "job1", At: time.Now()})
	h.typingAtLeast(carol.ID, 1)
	natstest.HoldsUntil(t, time.Now().Add(300*time.Millisecond), func() error {
		if n := len(h.typing(carol.ID)); n != 1 {
			return fmt.Errorf("%d typing calls in 300 ms; want 1 (the next after 4 s)", n)
		}
		return nil
	})
}

// A 429 to sendChatAction is not tried again: the chat is shown "typing…"
// again once its retry_after has passed.
func TestTelegramTypingWaitsOutA429(t *testing.T) {
	h := startTelegram(t, false)
	h.api.FailChatActions(1, http.StatusTooManyRequests, 1)
	start := time.Now()
	h.publish(contract.Event{Kind: contract.KindStarted, JobID: "job1", At: start})
	h.typingAtLeast(carol.ID, 1)
	if first := h.typing(carol.ID)[0]; first.At.Sub(start) < time.Second {
		t.Errorf("typing shown %v after the start, through a 429 asking for 1 s", first.At.Sub(start))
	}
	h.publish(contract.Event{Kind: contract.KindDone, JobID: "job1", Text: "done", Status: contract.StatusOK, At: time.Now()})
	if c := h.api.WaitCalls(t, 1, 5*time.Second)[0]; c.Text != "done" {
		t.Errorf("reply %+v; want done", c)
	}
}

// A reply's preview links come as buttons that open them, one per row
// under its choices' row; a link Telegram cannot open from the phone
// (http, on the machine's own name) stays in the text only.
func TestTelegramLinkButtons(t *testing.T) {
	h := startTelegram(t, false)
	links := []contract.Link{{URL: "https://abc.preview.example.com/", Label: "Open port 5173"}, {URL: "http://def.preview.localhost:3001/", Label: "Open port 8080"}}
	h.publish(contract.Event{Kind: contract.KindDone, Text: "The app is running: https://abc.preview.example.com/", Status: contract.StatusOK, Links: links[:1]})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "Changed it. https://abc.preview.example.com/", Status: contract.StatusOK, Approval: true,
		Choices: []string{contract.ActionApprove, contract.ActionReject}, Links: links})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "local: http://def.preview.localhost:3001/", Status: contract.StatusOK, Links: links[1:]})
	open := []telegramtest.Button{{Text: "Open port 5173", URL: "https://abc.preview.example.com/"}}
	want := [][][]telegramtest.Button{
		{open},
		{{{Text: "Approve", Data: "approve"}, {Text: "Reject", Data: "reject"}}, open},
		nil,
	}
	calls := h.api.WaitCalls(t, len(want), 5*time.Second)
	for i, w := range want {
		if c := calls[i]; c.Method != "sendMessage" || !reflect.DeepEqual(c.Keyboard, w) {
			t.Errorf("call %d: %s %q with keyboard %v; want sendMessage with %v", i, c.Method, c.Text, c.Keyboard, w)
		}
	}
}

// Telegram's crawler never fetches a link textslash sends (a preview link
// opens the person's dev server to whoever has it): every text goes with
// its link preview off, a reply carrying preview links, a page of a long
// reply whose link is not among the reply's preview links, and progress
// lines, sent or edited.
func TestTelegramShowsNoLinkPreviews(t *testing.T) {
	h := startTelegram(t, false)
	link := "https://abc.preview.example.com/"
	h.publish(contract.Event{Kind: contract.KindDone, Text: "The app is running: " + link, Status: contract.StatusOK,
		Links: []contract.Link{{URL: link, Label: "Open port 5173"}}})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "See " + link + "\n" + strings.Repeat("line of the reply\n", 300), Status: contract.StatusOK,
		Links: []contract.Link{{URL: link, Label: "Open port 5173"}}})
	h.api.WaitCalls(t, 2, 5*time.Second)
	h.publish(contract.Event{Kind: contract.KindProgress, JobID: "job1", Text: "Running npm run dev"})
	h.api.WaitCalls(t, 3, 5*time.Second)
	h.publish(contract.Event{Kind: contract.KindProgress, JobID: "job1", Text: "Fetching " + link})
	calls := h.api.WaitCalls(t, 4, 5*time.Second)
	if got := methods(calls); !slices.Equal(got, []string{"sendMessage", "sendMessage", "sendMessage", "editMessageText"}) {
		t.Fatalf("methods %q", got)
	}
	for i, c := range calls {
		if !c.NoLinkPreview {
			t.Errorf("call %d: %s %q with its link preview on; want it off", i, c.Method, c.Text[:min(len(c.Text), 40)])
		}
	}
}

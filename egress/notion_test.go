package egress_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/egress/notionmirror"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/notion"
	"github.com/textslash/textslash/notiontest"
)

const notionToken = "ntn_egress_test_0123456789"

// notionHarness is an egress mirroring Notion tasks onto a fake Notion.
type notionHarness struct {
	t   *testing.T
	js  jetstream.JetStream
	api *notiontest.Server
	db  string
	n   int
}

func startNotion(t *testing.T, done string) *notionHarness {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	api := notiontest.New(t, notionToken)
	db := api.AddDatabase("Status", "To do", "In progress", "Done", "Failed")
	// A stand-in for the media service: signed links to the media store.
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := signer.Check(r.URL.Path, r.URL.Query().Get("e"), r.URL.Query().Get("s"), time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		store, err := ns.JS.ObjectStore(r.Context(), contract.BucketMedia)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		id := strings.TrimSuffix(path.Base(r.URL.Path), path.Ext(r.URL.Path))
		data, err := store.GetBytes(r.Context(), id)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(media.Close)
	e, err := egress.New(egress.Config{Signer: signer, Notion: &notionmirror.Config{
		Client:   &notion.Client{BaseURL: api.URL(), Token: notionToken},
		Database: db, StatusProperty: "Status", InProgress: "In progress", Done: done, Failed: "Failed",
		MediaURL: media.URL, ProgressEvery: time.Hour,
	}}, ns.JS, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("egress: %v", err)
		}
	})
	// The consumer starts from events published after it exists.
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		_, err := ns.JS.Consumer(t.Context(), contract.StreamEvents, notionmirror.Consumer().Durable)
		return err
	})
	return &notionHarness{t: t, js: ns.JS, api: api, db: db}
}

func (h *notionHarness) publish(ev contract.Event) {
	h.t.Helper()
	h.n++
	ev.User = contract.User{Channel: contract.ChannelTelegram, ID: "4242"}
	if err := bus.PublishEvent(h.t.Context(), h.js, ev, fmt.Sprintf("notion-test-%d", h.n)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *notionHarness) storePNG() contract.Image {
	h.t.Helper()
	store, err := h.js.ObjectStore(h.t.Context(), contract.BucketMedia)
	if err != nil {
		h.t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 8, 8))); err != nil {
		h.t.Fatal(err)
	}
	img, err := bus.PutImage(h.t.Context(), store, "image/png", buf.Bytes())
	if err != nil {
		h.t.Fatal(err)
	}
	return img
}

func commentTexts(cs []notiontest.Comment) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Text)
	}
	return out
}

// A Notion task's events land on its page: textslash's notices about it
// are comments (those for the chat alone, without the job, are not),
// started sets In progress, the
// first progress line is a comment (later ones within ProgressEvery are
// left out), done uploads each image under a comment with its caption,
// comments the reply and sets Done. Events of other jobs touch nothing.
func TestNotionMirrorsATask(t *testing.T) {
	h := startNotion(t, "Done")
	page := h.api.AddPage(h.db, "Login screen is broken", "To do")
	job := contract.NotionJobID(page, time.Now())
	img := h.storePNG()
	img.Caption = "Login page: the button is greyed out"

	h.publish(contract.Event{Kind: contract.KindStarted, JobID: "SM0123", Text: "not a Notion task"})
	h.publish(contract.Event{Kind: contract.KindNotice, JobID: job, Text: "Got it, I'll process this next."})
	h.publish(contract.Event{Kind: contract.KindNotice, Text: "📋 A task from Notion: Login screen is broken"}) // for the chat
	h.publish(contract.Event{Kind: contract.KindStarted, JobID: job, Text: "Login screen is broken"})
	h.publish(contract.Event{Kind: contract.KindProgress, JobID: job, Text: "Running `npx playwright test`"})
	h.publish(contract.Event{Kind: contract.KindProgress, JobID: job, Text: "Reading login.tsx"})
	h.publish(contract.Event{Kind: contract.KindDone, JobID: job, Status: contract.StatusOK, Text: "The button has no handler.",
		Images: []contract.Image{img}, Approval: true})
	natstest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if s := h.api.Status(page); s != "Done" {
			return fmt.Errorf("status %q; want Done", s)
		}
		return nil
	})
	cs := h.api.Comments(page)
	want := []string{
		"ℹ️ Got it, I'll process this next.",
		"⏳ Running `npx playwright test`",
		"Login page: the button is greyed out",
		"✅ Done. The changes wait for telegram:4242's approval in their chat.\n\nThe button has no handler.",
	}
	if got := commentTexts(cs); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("comments %q; want %q", got, want)
	}
	if f := cs[2].Files; len(f) != 1 || f[0].ContentType != "image/png" || !bytes.HasPrefix(f[0].Data, []byte("\x89PNG")) {
		t.Errorf("screenshot comment files %+v; want the PNG", f)
	}
	if n := h.api.Requests("PATCH", "/v1/pages/"); n != 2 {
		t.Errorf("%d page updates; want In progress and Done", n)
	}
}

// A run that fails sets Failed with the reason (an image the media
// service no longer has is said to have expired); a status Notion refuses
// (no such option) leaves a comment saying why, and the event is done
// with rather than retried forever.
func TestNotionFailuresAreNoted(t *testing.T) {
	h := startNotion(t, "Finished") // not an option of the database
	page := h.api.AddPage(h.db, "Flaky test", "To do")
	failed := h.api.AddPage(h.db, "Slow build", "To do")
	h.publish(contract.Event{Kind: contract.KindDone, JobID: contract.NotionJobID(failed, time.Now()), Status: contract.StatusTimeout,
		Text: "The run took longer than 5m0s and was stopped.", Images: []contract.Image{{ID: "gone", ContentType: "image/png", Size: 10}}})
	h.publish(contract.Event{Kind: contract.KindDone, JobID: contract.NotionJobID(page, time.Now()), Status: contract.StatusOK, Text: "Fixed."})
	natstest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if n := len(h.api.Comments(page)); n != 2 {
			return fmt.Errorf("comments %q; want the reply and the refusal", commentTexts(h.api.Comments(page)))
		}
		return nil
	})
	if s := h.api.Status(failed); s != "Failed" {
		t.Errorf("timed-out task's status %q; want Failed", s)
	}
	if got := commentTexts(h.api.Comments(failed)); len(got) != 2 || got[0] != "📎 screenshot-1.png expired before it could be attached." ||
		got[1] != "❌ Failed (timeout).\n\nThe run took longer than 5m0s and was stopped." {
		t.Errorf("timed-out task's comments %q", got)
	}
	got := commentTexts(h.api.Comments(page))
	if !strings.HasPrefix(got[1], `textslash could not set Status to "Finished": `) {
		t.Errorf("comments %q; want the refusal noted", got)
	}
	if s := h.api.Status(page); s != "To do" {
		t.Errorf("status %q; want unchanged", s)
	}
}

package egress_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/natstest"
)

// csvFile is a file the runner stored; the Telegram harness's media
// stand-in serves csvData for it.
var csvFile = contract.Image{ID: "f1", ContentType: "text/csv; charset=utf-8", Size: len(csvData), Name: "out.csv"}

const csvData = "a,b\n1,2\n"

// Files go to Telegram as documents (sendDocument, uploaded: Telegram takes
// other types by URL than GIF, PDF and ZIP), with the caption rules of
// photos, and never in a media group with photos.
func TestTelegramDocuments(t *testing.T) {
	for _, upload := range []bool{false, true} {
		t.Run(fmt.Sprintf("upload=%t", upload), func(t *testing.T) {
			h := startTelegram(t, upload)
			h.publish(contract.Event{Kind: contract.KindDone, Text: "here", Images: []contract.Image{csvFile}, Status: contract.StatusOK})
			h.publish(contract.Event{Kind: contract.KindDone, Text: "mixed", Images: []contract.Image{images[0], csvFile, images[1]}, Status: contract.StatusOK})
			h.publish(contract.Event{Kind: contract.KindDone, Text: "one of each", Images: []contract.Image{csvFile, images[0]}, Status: contract.StatusOK})
			h.publish(contract.Event{Kind: contract.KindDone, Text: "approve?", Images: []contract.Image{csvFile}, Status: contract.StatusOK, Approval: true, Choices: []string{"approve", "reject"}})
			h.publish(contract.Event{Kind: contract.KindDone, Text: strings.Repeat("long ", 300), Images: []contract.Image{csvFile}, Status: contract.StatusOK})
			calls := h.api.WaitCalls(t, 8, 5*time.Second)
			want := []struct {
				method, text string
				photos, docs int
			}{
				{"sendDocument", "here", 0, 1},
				{"sendMediaGroup", "mixed", 2, 0},
				{"sendDocument", "", 0, 1},
				{"sendPhoto", "one of each", 1, 0},
				{"sendDocument", "", 0, 1},
				{"sendDocument", "approve?", 0, 1},
				{"sendMessage", strings.TrimSpace(strings.Repeat("long ", 300)), 0, 0},
				{"sendDocument", "", 0, 1},
			}
			if got := methods(calls); len(got) != len(want) {
				t.Fatalf("methods %q; want %d calls", got, len(want))
			}
			for i, w := range want {
				c := calls[i]
				if c.Method != w.method || strings.TrimSpace(c.Text) != w.text || len(c.Photos) != w.photos || len(c.Documents) != w.docs {
					t.Errorf("call %d: %s %q, %d photos, %d documents; want %s %q, %d, %d", i, c.Method, prefix(c.Text), len(c.Photos), len(c.Documents), w.method, prefix(w.text), w.photos, w.docs)
				}
				if w.docs == 1 && (c.DocumentName != "out.csv" || string(c.DocumentData) != csvData || !strings.HasPrefix(c.Documents[0], "upload:")) {
					t.Errorf("call %d: document %q named %q, %q; want out.csv uploaded", i, c.Documents, c.DocumentName, c.DocumentData)
				}
			}
			if kb := calls[5].Keyboard; len(kb) != 1 || len(kb[0]) != 2 || kb[0][0].Data != "approve" {
				t.Errorf("approval document keyboard %+v; want approve and reject buttons", kb)
			}
		})
	}
}

// A file too large for Telegram's uploads is left out with a note.
func TestTelegramDocumentTooLarge(t *testing.T) {
	h := startTelegram(t, true)
	big := csvFile
	big.Size = 60 << 20
	h.publish(contract.Event{Kind: contract.KindDone, Text: "big", Images: []contract.Image{big}, Status: contract.StatusOK})
	calls := h.api.WaitCalls(t, 1, 5*time.Second)
	if calls[0].Method != "sendMessage" || !strings.Contains(calls[0].Text, "1 file too large") {
		t.Errorf("call %+v; want the text with a note", calls[0])
	}
}

// On WhatsApp and SMS a file is a signed media URL of its /files/ path,
// whose last element is the name WhatsApp shows.
func TestTwilioFileMediaURL(t *testing.T) {
	h := start(t, twilio.Config{})
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "the data", Images: []contract.Image{csvFile}, Status: contract.StatusOK})
	msgs := h.api.WaitMessages(t, 1, 5*time.Second)
	want := "https://pub.example.com/files/f1/out.csv?e="
	if len(msgs[0].MediaURLs) != 1 || !strings.HasPrefix(msgs[0].MediaURLs[0], want) {
		t.Fatalf("media %q; want one signed link %s…", msgs[0].MediaURLs, want)
	}
	path, q, _ := strings.Cut(strings.TrimPrefix(msgs[0].MediaURLs[0], "https://pub.example.com"), "?")
	v, _ := url.ParseQuery(q)
	if err := signer.Check(path, v.Get("e"), v.Get("s"), time.Now()); err != nil {
		t.Errorf("link not valid for media: %v", err)
	}
	if msgs[0].Body != "the data" {
		t.Errorf("body %q", msgs[0].Body)
	}
}

// webEvents runs egress's web chat, publishes the events events makes for a
// new session's user, and returns the data of the first n events that
// session's event stream sends.
func webEvents(t *testing.T, n int, events func(u contract.User) []contract.Event) [][]byte {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	sessions, err := contract.NewWebSessions([]byte("web session key 0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	cookie, u := sessions.New()
	e, err := egress.New(egress.Config{WebChat: true, Sessions: sessions, Signer: signer}, ns.JS, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	for i, ev := range events(u) {
		if err := bus.PublishEvent(t.Context(), ns.JS, ev, fmt.Sprintf("test-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/events", nil)
	req.AddCookie(&http.Cookie{Name: contract.WebSessionCookie, Value: cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var out [][]byte
	for len(out) < n && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, []byte(data))
		}
	}
	if len(out) < n {
		t.Fatalf("%d events; want %d: %v", len(out), n, sc.Err())
	}
	return out
}

// The web chat's done event carries a file's signed /files/ link, with its
// name and type in images for the page to show a download link.
func TestWebEventFile(t *testing.T) {
	data := webEvents(t, 1, func(u contract.User) []contract.Event {
		return []contract.Event{{Kind: contract.KindDone, User: u, JobID: "m1", Text: "the data", Images: []contract.Image{images[0], csvFile}, Status: contract.StatusOK}}
	})
	var got struct {
		contract.Event
		ImageURLs []string `json:"image_urls"`
	}
	if err := json.Unmarshal(data[0], &got); err != nil {
		t.Fatal(err)
	}
	if len(got.ImageURLs) != 2 || !strings.HasPrefix(got.ImageURLs[1], "/files/f1/out.csv?e=") || !strings.HasPrefix(got.ImageURLs[0], "/images/a1.jpeg?e=") {
		t.Fatalf("image_urls %q; want the image's, then the file's /files/ link", got.ImageURLs)
	}
	if !slices.Equal([]string{got.Images[1].Name, got.Images[1].ContentType}, []string{"out.csv", csvFile.ContentType}) {
		t.Errorf("images %+v; want the file's name and type", got.Images)
	}
}

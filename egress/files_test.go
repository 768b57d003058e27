package egress_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/textslash/textslash/contract"
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

package egress_test

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/textslash/textslash/contract"
)

// withCaption is img with caption.
func withCaption(img contract.Image, caption string) contract.Image {
	img.Caption = caption
	return img
}

// On Telegram a captioned image is a photo of its own with its caption
// (cut to 1,024 characters), after the reply and its other photos.
func TestTelegramCaptions(t *testing.T) {
	h := startTelegram(t, true)
	long := strings.Repeat("The login form shows an error. ", 50) // 1,550 characters
	h.publish(contract.Event{Kind: contract.KindDone, Text: "here", Status: contract.StatusOK,
		Images: []contract.Image{withCaption(images[0], "The login form\nshows an error"), images[1], withCaption(images[2], long)}})
	calls := h.api.WaitCalls(t, 3, 5*time.Second)
	if got := methods(calls); !slices.Equal(got, []string{"sendPhoto", "sendPhoto", "sendPhoto"}) {
		t.Fatalf("methods %q; want three photos", got)
	}
	if calls[0].Text != "here" || calls[1].Text != "The login form\nshows an error" {
		t.Errorf("captions %q, %q; want the reply with the uncaptioned photo, then the first caption", calls[0].Text, calls[1].Text)
	}
	if n := utf8.RuneCountInString(calls[2].Text); n > 1024 || n < 1000 || !strings.HasSuffix(calls[2].Text, "…") {
		t.Errorf("long caption of %d characters; want it cut to at most 1,024", n)
	}
	for i, c := range calls {
		if len(c.Photos) != 1 || !strings.HasPrefix(c.Photos[0], "upload:") {
			t.Errorf("call %d: photos %q; want one uploaded", i, c.Photos)
		}
	}
}

// On WhatsApp and SMS a captioned image is a message of its own: the
// caption its body, the image its media.
func TestTwilioCaptions(t *testing.T) {
	h := start(t, twilio.Config{})
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "here", Status: contract.StatusOK,
		Images: []contract.Image{images[0], withCaption(images[1], "The login form\nshows an error")}})
	msgs := h.api.WaitMessages(t, 2, 5*time.Second)
	if got := bodies(msgs); !slices.Equal(got, []string{"here", "The login form\nshows an error"}) {
		t.Fatalf("bodies %q; want the reply, then the caption", got)
	}
	for i, want := range []string{"/images/a1.jpeg?", "/images/a2.jpeg?"} {
		if len(msgs[i].MediaURLs) != 1 || !strings.Contains(msgs[i].MediaURLs[0], want) {
			t.Errorf("message %d media %q; want %s…", i, msgs[i].MediaURLs, want)
		}
	}
	h.publish(contract.Event{Kind: contract.KindDone, User: bob, Text: "sms", Status: contract.StatusOK,
		Images: []contract.Image{withCaption(images[0], "first"), images[1], images[2]}})
	msgs = h.api.WaitMessages(t, 4, 5*time.Second)
	if msgs[2].Body != "sms" || len(msgs[2].MediaURLs) != 2 || msgs[3].Body != "first" || len(msgs[3].MediaURLs) != 1 {
		t.Errorf("MMS: %q with %d images, %q with %d; want the reply with the two uncaptioned, then the captioned one",
			msgs[2].Body, len(msgs[2].MediaURLs), msgs[3].Body, len(msgs[3].MediaURLs))
	}
}

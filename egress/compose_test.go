package egress

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

// The rules of WhatsApp and SMS through Twilio (channels/twilio's
// defaults): 1,600 characters, one image of 5 MB on WhatsApp, ten of 1 MB
// on SMS.
var (
	whatsapp = channel.Rules{}.WithDefaults(channel.Rules{BodyLimit: 1600, MaxMedia: 1, MaxImageBytes: 5 << 20})
	sms      = channel.Rules{}.WithDefaults(channel.Rules{BodyLimit: 1600, MaxMedia: 10, MaxImageBytes: 1 << 20})
)

func imgs(n, size int) []contract.Image {
	out := make([]contract.Image, n)
	for i := range out {
		out[i] = contract.Image{ID: fmt.Sprintf("img%d", i+1), ContentType: "image/jpeg", Size: size}
	}
	return out
}

func mediaURL(img contract.Image) string { return "https://pub" + contract.MediaPath(img) }

func TestCompose(t *testing.T) {
	long := strings.Repeat("All work and no play makes Jack a dull boy. ", 91) // 4004 characters
	tests := []struct {
		name      string
		rules     channel.Rules
		text      string
		images    []contract.Image
		wantBody  []string // of each message; "" for image-only
		wantMedia []int    // images in each message
		wantRest  int      // pages left for "more"
	}{
		{"text", whatsapp, "hi", nil, []string{"hi"}, []int{0}, 0},
		{"one image goes with the text", whatsapp, "look", imgs(1, 100), []string{"look"}, []int{1}, 0},
		{"whatsapp: one image per message", whatsapp, "look", imgs(3, 100), []string{"look", "", ""}, []int{1, 1, 1}, 0},
		{"mms: ten per message", sms, "look", imgs(12, 100), []string{"look", ""}, []int{10, 2}, 0},
		{"mms: images over 1 MB left out", sms, "look", append(imgs(1, 100), imgs(1, 2<<20)...),
			[]string{"look\n\n(1 image(s) too large for this channel were left out.)"}, []int{1}, 0},
		{"exactly the limit", whatsapp, strings.Repeat("x", 1600), nil, []string{strings.Repeat("x", 1600)}, []int{0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, rest := compose(tt.rules, tt.text, tt.images, mediaURL)
			var bodies []string
			var media []int
			for _, m := range msgs {
				bodies, media = append(bodies, m.Body), append(media, len(m.Media))
			}
			if !slices.Equal(bodies, tt.wantBody) || !slices.Equal(media, tt.wantMedia) || len(rest) != tt.wantRest {
				t.Errorf("got bodies %q media %v rest %d; want %q %v %d", bodies, media, len(rest), tt.wantBody, tt.wantMedia, tt.wantRest)
			}
		})
	}

	t.Run("paged", func(t *testing.T) {
		msgs, rest := compose(whatsapp, long, imgs(2, 100), mediaURL)
		if len(msgs) != 2 || len(rest) != 2 {
			t.Fatalf("got %d messages and %d pages left; want 2 and 2", len(msgs), len(rest))
		}
		all := append([]string{msgs[0].Body}, rest...)
		for i, p := range all {
			if n := pages.Length(p); n > 1600 {
				t.Errorf("page %d: %d characters", i+1, n)
			}
		}
		if !strings.HasSuffix(all[0], "Reply MORE for the rest (page 1/3)") || !strings.HasSuffix(all[2], "(page 3/3)") {
			t.Errorf("footers: %q … %q", all[0][len(all[0])-40:], all[2][len(all[2])-20:])
		}
		if len(msgs[0].Media) != 1 || msgs[1].Body != "" || msgs[1].Media[0] != mediaURL(imgs(2, 100)[1]) {
			t.Errorf("images: %+v", msgs)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		r := whatsapp
		r.Truncate = true
		msgs, rest := compose(r, long, nil, mediaURL)
		if len(msgs) != 1 || len(rest) != 0 {
			t.Fatalf("got %d messages, %d pages left; want 1, 0", len(msgs), len(rest))
		}
		if b := msgs[0].Body; pages.Length(b) > 1500 || !strings.HasSuffix(b, MsgTruncated) {
			t.Errorf("body of %d characters ends %q", pages.Length(b), b[len(b)-30:])
		}
	})
}

func FuzzCompose(f *testing.F) {
	f.Add("hi", 0, 0, false, 1600)
	f.Add(strings.Repeat("👍🏽 word ", 800), 3, 100, false, 1600)
	f.Add(strings.Repeat("x", 5000), 12, 2<<20, true, 1600)
	f.Fuzz(func(t *testing.T, text string, n, size int, mms bool, limit int) {
		if n < 0 || n > 40 || limit < 60 || limit > 5000 || size < 0 {
			t.Skip()
		}
		r := whatsapp
		if mms {
			r = sms
		}
		r.BodyLimit, r.TruncateAt = limit, 0
		r = r.WithDefaults(r)
		msgs, rest := compose(r, text, imgs(n, size), mediaURL)
		var sent []string
		for _, m := range msgs {
			if pages.Length(m.Body) > r.BodyLimit {
				t.Fatalf("body of %d characters over %d", pages.Length(m.Body), r.BodyLimit)
			}
			if len(m.Media) > r.MaxMedia {
				t.Fatalf("%d images in one message; max %d", len(m.Media), r.MaxMedia)
			}
			sent = append(sent, m.Media...)
		}
		for _, p := range rest {
			if pages.Length(p) > r.BodyLimit {
				t.Fatalf("page of %d characters over %d", pages.Length(p), r.BodyLimit)
			}
		}
		var want []string
		if size <= r.MaxImageBytes {
			for _, img := range imgs(n, size) {
				want = append(want, mediaURL(img))
			}
		}
		if !slices.Equal(sent, want) {
			t.Fatalf("images sent %q; want %q", sent, want)
		}
	})
}

package egress

import (
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

// captioned is img with caption.
func captioned(img contract.Image, caption string) contract.Image {
	img.Caption = caption
	return img
}

// Each captioned image goes in a message of its own, its caption the text
// (cut to the channel's caption limit, else its body limit), after the
// reply and the images without a caption, before the files.
func TestComposeCaptions(t *testing.T) {
	telegram := channel.Rules{DocumentsApart: true, CaptionLimit: 1024}.WithDefaults(channel.Rules{BodyLimit: 4096, MaxMedia: 10, MaxImageBytes: 10 << 20})
	a := imgs(3, 100)
	file := contract.Image{ID: "f1", ContentType: "text/csv", Size: 8, Name: "out.csv"}
	long := strings.Repeat("The login form shows an error. ", 100) // 3,100 characters
	tests := []struct {
		name      string
		rules     channel.Rules
		images    []contract.Image
		wantBody  []string
		wantMedia [][]string // image ids of each message
	}{
		{"whatsapp", whatsapp, []contract.Image{a[0], captioned(a[1], "Login\nform"), a[2]},
			[]string{"reply", "", "Login\nform"}, [][]string{{"img1"}, {"img3"}, {"img2"}}},
		{"all captioned", sms, []contract.Image{captioned(a[0], "one"), captioned(a[1], "two")},
			[]string{"reply", "one", "two"}, [][]string{nil, {"img1"}, {"img2"}}},
		{"telegram", telegram, []contract.Image{captioned(a[0], "one"), a[1], a[2], file},
			[]string{"reply", "one", ""}, [][]string{{"img2", "img3"}, {"img1"}, {"f1"}}},
		{"too large", sms, []contract.Image{captioned(contract.Image{ID: "big", ContentType: "image/jpeg", Size: 2 << 20}, "huge")},
			[]string{"reply\n\n(1 image(s) too large for this channel were left out.)"}, [][]string{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, _ := compose(tt.rules, "reply", tt.images, mediaURL)
			var bodies []string
			var media [][]string
			for _, m := range msgs {
				bodies = append(bodies, m.Body)
				var ids []string
				for _, u := range m.Media {
					id, _, _ := strings.Cut(strings.TrimPrefix(u, "https://pub/"), ".")
					id = strings.TrimPrefix(strings.TrimPrefix(id, "images/"), "files/")
					id, _, _ = strings.Cut(id, "/")
					ids = append(ids, id)
				}
				media = append(media, ids)
			}
			if !slices.Equal(bodies, tt.wantBody) || !slices.EqualFunc(media, tt.wantMedia, slices.Equal) {
				t.Errorf("got bodies %q media %q; want %q %q", bodies, media, tt.wantBody, tt.wantMedia)
			}
		})
	}

	for _, tt := range []struct {
		name  string
		rules channel.Rules
		limit int
	}{{"whatsapp", whatsapp, 1600}, {"telegram", telegram, 1024}} {
		msgs, _ := compose(tt.rules, "reply", []contract.Image{captioned(a[0], long)}, mediaURL)
		c := msgs[len(msgs)-1]
		if n := pages.Length(c.Body); n > tt.limit || n < tt.limit-40 || !strings.HasSuffix(c.Body, "…") || len(c.Media) != 1 {
			t.Errorf("%s: a 3,100-character caption went as %d characters (%q…) with %d images; want it cut near %d, ending in …", tt.name, n, c.Body[:20], len(c.Media), tt.limit)
		}
	}
}

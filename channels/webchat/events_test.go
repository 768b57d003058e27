package webchat_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

var (
	photo   = contract.Image{ID: "a1", ContentType: "image/jpeg", Size: 10}
	another = contract.Image{ID: "a2", ContentType: "image/jpeg", Size: 10}
	csvFile = contract.Image{ID: "f1", ContentType: "text/csv; charset=utf-8", Size: 8, Name: "out.csv"}
)

// The done event carries a file's signed /files/ link, with its name and
// type in images for the page to show a download link.
func TestEventFile(t *testing.T) {
	data := start(t).events(t, 1, func(u contract.User) []contract.Event {
		return []contract.Event{{Kind: contract.KindDone, User: u, JobID: "m1", Text: "the data", Images: []contract.Image{photo, csvFile}, Status: contract.StatusOK}}
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

// The image and done events carry each image's caption.
func TestEventCaptions(t *testing.T) {
	img := photo
	img.Caption = "The login form\nshows an error"
	data := start(t).events(t, 2, func(u contract.User) []contract.Event {
		return []contract.Event{
			{Kind: contract.KindImage, User: u, JobID: "m1", Image: &img},
			{Kind: contract.KindDone, User: u, JobID: "m1", Text: "here", Images: []contract.Image{img, another}, Status: contract.StatusOK},
		}
	})
	var got []map[string]any
	for _, d := range data {
		var ev map[string]any
		if err := json.Unmarshal(d, &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if c := got[0]["image"].(map[string]any)["caption"]; c != img.Caption {
		t.Errorf("image event's caption %v; want %q", c, img.Caption)
	}
	imgs := got[1]["images"].([]any)
	if c := imgs[0].(map[string]any)["caption"]; c != img.Caption {
		t.Errorf("done event's first image caption %v; want %q", c, img.Caption)
	}
	if _, ok := imgs[1].(map[string]any)["caption"]; ok {
		t.Errorf("done event's second image has a caption: %v", imgs[1])
	}
}

// "more" has no pages to turn on the web chat: the page is told so.
func TestMoreIsANotice(t *testing.T) {
	data := start(t).events(t, 1, func(u contract.User) []contract.Event {
		return []contract.Event{{Kind: contract.KindMore, User: u}}
	})
	var got contract.Event
	if err := json.Unmarshal(data[0], &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != contract.KindNotice || !strings.Contains(got.Text, "no pages") {
		t.Errorf("more came as %s %q; want a notice that the web chat has no pages", got.Kind, got.Text)
	}
}

// An open event stream ends when the web chat stops (Run returns), or an
// HTTP server's shutdown would wait for it until its deadline.
func TestEventStreamEndsWithRun(t *testing.T) {
	c := start(t)
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- c.wc.Run(ctx, c) }()
	srv := httptest.NewServer(c.pages)
	defer srv.Close()
	cookie, _ := c.sessions.New()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/events", nil)
	req.AddCookie(&http.Cookie{Name: contract.WebSessionCookie, Value: cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
	stop()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the stream ended with %v; want its end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream still open 5 s after Run returned")
	}
}

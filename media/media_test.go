package media_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/natstest"
)

// serve provisions an embedded server, opens media on it and serves its
// handler.
func serve(t *testing.T) (jetstream.ObjectStore, *httptest.Server) {
	t.Helper()
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := contract.Provision(ctx, s.JS, contract.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	m, err := media.New(media.Config{}, s.JS, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := m.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	store, err := s.JS.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return store, srv
}

func encodeImage(t *testing.T, format string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 16, 9))
	for x := range 16 {
		for y := range 9 {
			img.Set(x, y, color.RGBA{uint8(x * 16), uint8(y * 28), 200, 255})
		}
	}
	var buf bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func do(t *testing.T, method, url string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, body
}

func TestServeImage(t *testing.T) {
	store, srv := serve(t)
	ctx := t.Context()
	for _, tt := range []struct {
		format, contentType string
	}{
		{"jpeg", "image/jpeg"},
		{"png", "image/png"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			data := encodeImage(t, tt.format)
			img, err := contract.PutImage(ctx, store, tt.contentType, data)
			if err != nil {
				t.Fatalf("PutImage: %v", err)
			}
			url := srv.URL + contract.MediaPath(img)
			if want := "/media/" + img.ID + "." + tt.format; contract.MediaPath(img) != want {
				t.Fatalf("MediaPath: got %q; want %q", contract.MediaPath(img), want)
			}

			resp, body := do(t, http.MethodGet, url, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: got %d %s; want 200", url, resp.StatusCode, body)
			}
			if !bytes.Equal(body, data) {
				t.Errorf("GET: got %d bytes that differ from the %d stored", len(body), len(data))
			}
			h := resp.Header
			if got := h.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type: got %q; want %q", got, tt.contentType)
			}
			if got := h.Get("Content-Length"); got != strconv.Itoa(len(data)) {
				t.Errorf("Content-Length: got %q; want %d", got, len(data))
			}
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q; want nosniff", got)
			}
			etag := h.Get("ETag")
			if len(etag) < 3 || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
				t.Fatalf("ETag: got %q; want a quoted tag", etag)
			}

			// Conditional GET with the tag: not modified, no body.
			resp, body = do(t, http.MethodGet, url, http.Header{"If-None-Match": {etag}})
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("GET If-None-Match %s: got %d with %d bytes; want 304, empty", etag, resp.StatusCode, len(body))
			}
			// Another tag: the image.
			resp, body = do(t, http.MethodGet, url, http.Header{"If-None-Match": {`"other"`}})
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
				t.Errorf("GET If-None-Match other: got %d with %d bytes; want 200 and the image", resp.StatusCode, len(body))
			}

			// HEAD: the same headers, no body.
			resp, body = do(t, http.MethodHead, url, nil)
			if resp.StatusCode != http.StatusOK || len(body) != 0 {
				t.Errorf("HEAD: got %d with %d bytes; want 200, empty", resp.StatusCode, len(body))
			}
			if got := resp.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("HEAD Content-Type: got %q; want %q", got, tt.contentType)
			}
			if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(data)) {
				t.Errorf("HEAD Content-Length: got %q; want %d", got, len(data))
			}
			if got := resp.Header.Get("ETag"); got != etag {
				t.Errorf("HEAD ETag: got %q; want %q", got, etag)
			}

			// Other methods are not served.
			if resp, _ := do(t, http.MethodPost, url, nil); resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("POST: got %d; want 405", resp.StatusCode)
			}

			// Gone from the store: gone from the web.
			if err := store.Delete(ctx, img.ID); err != nil {
				t.Fatal(err)
			}
			if resp, body := do(t, http.MethodGet, url, nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET after delete: got %d %q; want 404", resp.StatusCode, body)
			}
		})
	}
}

func TestServeNotFound(t *testing.T) {
	store, srv := serve(t)
	ctx := t.Context()
	jpg, err := contract.PutImage(ctx, store, "image/jpeg", encodeImage(t, "jpeg"))
	if err != nil {
		t.Fatal(err)
	}
	pngImg, err := contract.PutImage(ctx, store, "image/png", encodeImage(t, "png"))
	if err != nil {
		t.Fatal(err)
	}
	// An object with a valid name but no Content-Type header.
	const bare = "ABCDEFGHIJKLMNOPQRSTUV"
	if _, err := store.PutBytes(ctx, bare, encodeImage(t, "jpeg")); err != nil {
		t.Fatal(err)
	}
	// An object claiming a type it may not be served as.
	const svg = "SVGSVGSVGSVGSVGSVGSVG1"
	if _, err := store.Put(ctx, jetstream.ObjectMeta{Name: svg, Headers: nats.Header{"Content-Type": {"image/svg+xml"}}},
		strings.NewReader("<svg/>")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/media/" + jpg.ID + ".png",     // a jpeg asked for as png
		"/media/" + pngImg.ID + ".jpeg", // a png asked for as jpeg
		"/media/" + strings.Repeat("Z", 22) + ".jpeg",
		"/media/" + bare + ".jpeg",
		"/media/" + svg + ".png",
		"/media/" + svg + ".jpeg",
	} {
		resp, body := do(t, http.MethodGet, srv.URL+path, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: got %d %q; want 404", path, resp.StatusCode, body)
		}
	}
}

func TestServeMalformedNames(t *testing.T) {
	store, srv := serve(t)
	img, err := contract.PutImage(t.Context(), store, "image/jpeg", encodeImage(t, "jpeg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/media/../x",
		"/media/..%2fx",
		"/media/%2e%2e%2f",
		"/media/%2e%2e%2f" + img.ID + ".jpeg",
		"/media/" + img.ID + "%2f..%2f" + img.ID + ".jpeg",
		"/media/" + img.ID + ".gif",
		"/media/" + img.ID + ".JPEG",
		"/media/" + img.ID + ".jpg",
		"/media/" + img.ID,
		"/media/" + img.ID + ".jpeg.png",
		"/media/" + img.ID + ".jpeg%00",
		"/media/" + img.ID + "%20.jpeg",
		"/media/" + img.ID + "/x.jpeg",
		"/media/.jpeg",
		"/media/",
		"/media",
		"/media/abc.jpeg",                             // too short
		"/media/" + strings.Repeat("a", 65) + ".jpeg", // too long
		"/media/" + img.ID[:15] + ".jpeg",
		"/media/" + img.ID + "-.jpeg",
	} {
		resp, body := do(t, http.MethodGet, srv.URL+path, nil)
		if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: got %d %q; want 400 or 404", path, resp.StatusCode, body)
		}
	}
}

func FuzzServeName(f *testing.F) {
	for _, s := range []string{"ABCDEFGHIJKLMNOPQRSTUV.jpeg", "../x", "a.png", "%2e%2e", "x.gif", ""} {
		f.Add(s)
	}
	s := natstest.RunJetStream(f)
	if err := contract.Provision(f.Context(), s.JS, contract.Options{}); err != nil {
		f.Fatal(err)
	}
	m, err := media.New(media.Config{}, s.JS, zerolog.Nop())
	if err != nil {
		f.Fatal(err)
	}
	if err := m.Open(f.Context()); err != nil {
		f.Fatal(err)
	}
	h := m.Handler()
	f.Fuzz(func(t *testing.T, name string) {
		req := httptest.NewRequest(http.MethodGet, "/media/x", nil)
		req.URL.Path = "/media/" + name
		req.SetPathValue("name", name)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		// The store is empty: nothing may be served.
		if w.Code == http.StatusOK {
			t.Fatalf("GET /media/%q: got 200; want an error", name)
		}
	})
}

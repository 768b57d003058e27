package media_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/natstest"
)

var signer, _ = contract.NewMediaSigner([]byte("test key 0123456789"), contract.MediaTTL)

// signed is path with a valid signature.
func signed(path string) string { return signer.SignPath(path, time.Now()) }

// serve provisions an embedded server, opens media on it and serves its
// handler.
func serve(t testing.TB) (jetstream.ObjectStore, *httptest.Server) {
	t.Helper()
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	m, err := media.New(media.Config{Signer: signer}, s.JS, zerolog.New(zerolog.NewTestWriter(t)))
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
			img, err := bus.PutImage(ctx, store, tt.contentType, data)
			if err != nil {
				t.Fatalf("PutImage: %v", err)
			}
			url := srv.URL + signer.URL(img, time.Now())
			if want := "/images/" + img.ID + "." + tt.format; contract.MediaPath(img) != want {
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
	jpg, err := bus.PutImage(ctx, store, "image/jpeg", encodeImage(t, "jpeg"))
	if err != nil {
		t.Fatal(err)
	}
	pngImg, err := bus.PutImage(ctx, store, "image/png", encodeImage(t, "png"))
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
		"/images/" + jpg.ID + ".png",     // a jpeg asked for as png
		"/images/" + pngImg.ID + ".jpeg", // a png asked for as jpeg
		"/images/" + strings.Repeat("Z", 22) + ".jpeg",
		"/images/" + bare + ".jpeg",
		"/images/" + svg + ".png",
		"/images/" + svg + ".jpeg",
	} {
		resp, body := do(t, http.MethodGet, srv.URL+signed(path), nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: got %d %q; want 404", path, resp.StatusCode, body)
		}
	}
}

func TestServeMalformedNames(t *testing.T) {
	store, srv := serve(t)
	img, err := bus.PutImage(t.Context(), store, "image/jpeg", encodeImage(t, "jpeg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/images/../x",
		"/images/..%2fx",
		"/images/%2e%2e%2f",
		"/images/%2e%2e%2f" + img.ID + ".jpeg",
		"/images/" + img.ID + "%2f..%2f" + img.ID + ".jpeg",
		"/images/" + img.ID + ".gif",
		"/images/" + img.ID + ".JPEG",
		"/images/" + img.ID + ".jpg",
		"/images/" + img.ID,
		"/images/" + img.ID + ".jpeg.png",
		"/images/" + img.ID + ".jpeg%00",
		"/images/" + img.ID + "%20.jpeg",
		"/images/" + img.ID + "/x.jpeg",
		"/images/.jpeg",
		"/images/",
		"/media",
		"/images/abc.jpeg",                             // too short
		"/images/" + strings.Repeat("a", 65) + ".jpeg", // too long
		"/images/" + img.ID[:15] + ".jpeg",
		"/images/" + img.ID + "-.jpeg",
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
	if err := bus.Provision(f.Context(), s.JS, bus.Options{}); err != nil {
		f.Fatal(err)
	}
	m, err := media.New(media.Config{Signer: signer}, s.JS, zerolog.Nop())
	if err != nil {
		f.Fatal(err)
	}
	if err := m.Open(f.Context()); err != nil {
		f.Fatal(err)
	}
	h := m.Handler()
	f.Fuzz(func(t *testing.T, name string) {
		req := httptest.NewRequest(http.MethodGet, signed("/images/x"), nil)
		req.URL.Path = "/images/" + name
		req.SetPathValue("name", name)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		// The store is empty: nothing may be served.
		if w.Code == http.StatusOK {
			t.Fatalf("GET /media/%q: got 200; want an error", name)
		}
	})
}

// Only a signed, unexpired link serves an image: a guessed id, a changed
// signature or an expired link get 403 even while the image exists.
func TestServeNeedsSignature(t *testing.T) {
	store, srv := serve(t)
	img, err := bus.PutImage(t.Context(), store, "image/jpeg", encodeImage(t, "jpeg"))
	if err != nil {
		t.Fatal(err)
	}
	good := signer.URL(img, time.Now())
	expired := signer.URL(img, time.Now().Add(-contract.MediaTTL-time.Minute))
	other, _ := contract.NewMediaSigner([]byte("another key 0123456789"), contract.MediaTTL)
	for _, tt := range []struct {
		name, path string
		status     int
	}{
		{"signed", good, 200},
		{"unsigned", contract.MediaPath(img), 403},
		{"signature changed", good[:len(good)-2] + "AA", 403},
		{"expiry changed", strings.Replace(good, "e=", "e=9", 1), 403},
		{"expired", expired, 403},
		{"another key", other.URL(img, time.Now()), 403},
	} {
		if resp, body := do(t, http.MethodGet, srv.URL+tt.path, nil); resp.StatusCode != tt.status {
			t.Errorf("%s: GET %s: got %d %q; want %d", tt.name, tt.path, resp.StatusCode, body, tt.status)
		}
	}
}

// The bucket's TTL ends an image: then its link, though signed, gets 404.
func TestServeAfterTTL(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{MediaTTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	m, err := media.New(media.Config{Signer: signer}, s.JS, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	store, _ := s.JS.ObjectStore(ctx, contract.BucketMedia)
	img, err := bus.PutImage(ctx, store, "image/png", encodeImage(t, "png"))
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL + signer.URL(img, time.Now())
	if resp, _ := do(t, http.MethodGet, url, nil); resp.StatusCode != 200 {
		t.Fatalf("fresh image: %d", resp.StatusCode)
	}
	natstest.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		if resp, _ := do(t, http.MethodGet, url, nil); resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("after the TTL: got %d; want 404", resp.StatusCode)
		}
		return nil
	})
}

// Beyond Keep images, the oldest are deleted.
func TestCullOldest(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	m, err := media.New(media.Config{Signer: signer, Keep: 3}, s.JS, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	store, _ := s.JS.ObjectStore(ctx, contract.BucketMedia)
	var ids []string
	for range 5 {
		img, err := bus.PutImage(ctx, store, "image/png", encodeImage(t, "png"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, img.ID)
		time.Sleep(20 * time.Millisecond) // distinct modification times
	}
	natstest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		infos, err := store.List(ctx)
		if err != nil {
			return err
		}
		var kept []string
		for _, i := range infos {
			kept = append(kept, i.Name)
		}
		slices.Sort(kept)
		want := slices.Sorted(slices.Values(ids[2:]))
		if !slices.Equal(kept, want) {
			return fmt.Errorf("kept %q; want the newest 3 %q", kept, want)
		}
		return nil
	})
}

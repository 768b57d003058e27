// Package media serves images from the media object store over HTTP. Objects
// expire by the bucket's TTL; names are checked strictly and never touch a
// file system path.
package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Config of the media service.
type Config struct{}

// Media serves the object store.
type Media struct {
	js    jetstream.JetStream
	log   zerolog.Logger
	store jetstream.ObjectStore
}

// New returns a media server reading through js.
func New(_ Config, js jetstream.JetStream, log zerolog.Logger) (*Media, error) {
	if js == nil {
		return nil, errors.New("media: no JetStream")
	}
	return &Media{js: js, log: log.With().Str("svc", "media").Logger()}, nil
}

// Open binds the object store; call it before serving.
func (m *Media) Open(ctx context.Context) error {
	s, err := m.js.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		return fmt.Errorf("object store %s: %w", contract.BucketMedia, err)
	}
	m.store = s
	return nil
}

// Handler serves GET and HEAD /media/<id>.jpeg (or .png).
func (m *Media) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /media/{name}", m.serve) // GET routes answer HEAD too
	return mux
}

// nameRE: an object id as the runner names them, and the image's extension.
var nameRE = regexp.MustCompile(`^([A-Za-z0-9]{16,64})\.(jpeg|png)$`)

func (m *Media) serve(w http.ResponseWriter, r *http.Request) {
	parts := nameRE.FindStringSubmatch(r.PathValue("name"))
	if parts == nil {
		http.Error(w, "bad image name", http.StatusBadRequest)
		return
	}
	id, ext := parts[1], parts[2]
	obj, err := m.store.Get(r.Context(), id)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		http.Error(w, "no such image (images expire)", http.StatusNotFound)
		return
	}
	if err != nil {
		m.log.Error().Err(err).Str("object", id).Msg("get image")
		http.Error(w, "image unavailable", http.StatusServiceUnavailable)
		return
	}
	defer obj.Close()
	info, err := obj.Info()
	if err != nil {
		http.Error(w, "image unavailable", http.StatusServiceUnavailable)
		return
	}
	ct := "image/" + ext
	if info.Headers.Get("Content-Type") != ct {
		http.Error(w, "no such image", http.StatusNotFound)
		return
	}
	etag := `"` + info.Digest + `"`
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatUint(info.Size, 10))
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, max-age=300")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, obj); err != nil {
		m.log.Warn().Err(err).Str("object", id).Msg("send image")
	}
}

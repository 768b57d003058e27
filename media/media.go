// Package media serves images and files from the media object store over HTTP. Objects
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
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Config of the media service.
type Config struct {
	// Signer checks the signature and expiry every image URL carries.
	Signer contract.MediaSigner
	// Keep is the most images kept; beyond it the oldest are deleted
	// (the bucket's TTL ends the rest). Default 100.
	Keep int
}

// Default returns the configuration with Keep, if left zero, set to
// contract.MediaKeep. It never fails and never checks: Validate does.
func (c Config) Default() Config {
	if c.Keep == 0 {
		c.Keep = contract.MediaKeep
	}
	return c
}

// Validate checks the configuration as it will run (Default's result):
// nil, or every setting refused, each a *contract.ConfigError. The Signer is a handle, not a setting:
// the binary makes it from its key, and checks that key itself.
func (c Config) Validate() error {
	var errs []error
	if c.Keep < 1 {
		errs = append(errs, bad("Keep", c.Keep, "must be at least 1"))
	}
	return errors.Join(errs...)
}

// bad is media's refusal of setting (its field path in Config); value is
// nil for secrets and for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting("media", setting, value, reason)
}

// Media serves the object store.
type Media struct {
	cfg   Config
	js    jetstream.JetStream
	log   zerolog.Logger
	store jetstream.ObjectStore
}

// New returns a media server reading through js, with cfg's defaults
// filled in; it refuses a bad cfg with Validate's error.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Media, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil {
		return nil, errors.New("media: no JetStream")
	}
	return &Media{cfg: cfg, js: js, log: log.With().Str("svc", "media").Logger()}, nil
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

// Handler serves GET and HEAD /images/<id>.jpeg (or .png), and files as
// downloads at /files/<id>/<name> (contract.MediaPath), with a valid
// signature (?e=<expiry>&s=<signature>, made by contract.MediaSigner).
func (m *Media) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /images/{name}", m.serve) // GET routes answer HEAD too
	mux.HandleFunc("GET /files/{id}/{name}", m.serveFile)
	return mux
}

// nameRE: an object id as the runner names them, and the image's extension.
var nameRE = regexp.MustCompile(`^([A-Za-z0-9]{16,64})\.(jpeg|png)$`)

// idRE: an object id as the runner names them.
var idRE = regexp.MustCompile(`^[A-Za-z0-9]{16,64}$`)

func (m *Media) serve(w http.ResponseWriter, r *http.Request) {
	parts := nameRE.FindStringSubmatch(r.PathValue("name"))
	if parts == nil {
		http.Error(w, "bad image name", http.StatusBadRequest)
		return
	}
	id, ext := parts[1], parts[2]
	q := r.URL.Query()
	if err := m.cfg.Signer.Check("/images/"+parts[0], q.Get("e"), q.Get("s"), time.Now()); err != nil {
		http.Error(w, "image link invalid or expired", http.StatusForbidden)
		return
	}
	m.send(w, r, id, func(h http.Header, stored string) bool {
		ct := "image/" + ext
		h.Set("Content-Type", ct)
		return stored == ct
	})
}

// serveFile serves a file as a download under the name in its link, with
// the type it was stored with, which browsers are told not to second-guess
// and never to run as a page.
func (m *Media) serveFile(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	if !idRE.MatchString(id) || name != contract.SafeName(name) {
		http.Error(w, "bad file name", http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	if err := m.cfg.Signer.Check("/files/"+id+"/"+name, q.Get("e"), q.Get("s"), time.Now()); err != nil {
		http.Error(w, "file link invalid or expired", http.StatusForbidden)
		return
	}
	m.send(w, r, id, func(h http.Header, stored string) bool {
		if stored == "" {
			stored = "application/octet-stream"
		}
		h.Set("Content-Type", stored)
		h.Set("Content-Disposition", `attachment; filename="`+name+`"`) // SafeName: no quote or backslash
		h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
		return true
	})
}

// send answers with object id when typed agrees: it sets the response's
// type headers from the object's stored Content-Type and says whether
// that object may be served here.
func (m *Media) send(w http.ResponseWriter, r *http.Request, id string, typed func(h http.Header, stored string) bool) {
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
	h := w.Header()
	if !typed(h, info.Headers.Get("Content-Type")) {
		for k := range h {
			h.Del(k)
		}
		http.Error(w, "no such image", http.StatusNotFound)
		return
	}
	etag := `"` + info.Digest + `"`
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

// Run keeps at most Config.Keep images, deleting the oldest, until ctx
// ends.
func (m *Media) Run(ctx context.Context) error {
	w, err := m.store.Watch(ctx, jetstream.IgnoreDeletes(), jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watch %s: %w", contract.BucketMedia, err)
	}
	defer func() { _ = w.Stop() }()
	m.cull(ctx) // what came while no media service ran
	for {
		select {
		case <-ctx.Done():
			return nil
		case info, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if info != nil {
				m.cull(ctx)
			}
		}
	}
}

func (m *Media) cull(ctx context.Context) {
	infos, err := m.store.List(ctx)
	if err != nil || len(infos) <= m.cfg.Keep {
		return
	}
	slices.SortFunc(infos, func(a, b *jetstream.ObjectInfo) int { return a.ModTime.Compare(b.ModTime) })
	for _, info := range infos[:len(infos)-m.cfg.Keep] {
		if err := m.store.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			m.log.Warn().Err(err).Str("object", info.Name).Msg("cull image")
			continue
		}
		m.log.Debug().Str("object", info.Name).Int("keep", m.cfg.Keep).Msg("oldest image culled")
	}
}

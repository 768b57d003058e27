package contract

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// PutImage stores an image in the media object store under a fresh
// unguessable id, with its Content-Type as an object header, and describes
// it for an image event. Width and height are the caller's to fill in.
func PutImage(ctx context.Context, store jetstream.ObjectStore, contentType string, data []byte) (Image, error) {
	if contentType != "image/jpeg" && contentType != "image/png" {
		return Image{}, fmt.Errorf("%w: content type %q", ErrInvalidPayload, contentType)
	}
	if got := http.DetectContentType(data); got != contentType {
		return Image{}, fmt.Errorf("%w: data is %s, not %s", ErrInvalidPayload, got, contentType)
	}
	img := Image{ID: nuid.Next(), ContentType: contentType, Size: len(data)}
	meta := jetstream.ObjectMeta{Name: img.ID, Headers: nats.Header{"Content-Type": []string{contentType}}}
	if _, err := store.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return Image{}, fmt.Errorf("store image: %w", err)
	}
	return img, nil
}

// SubjectMediaFetch is the request-reply service that copies a person's
// attachment from the provider into the media store. Ingress serves it,
// since it holds the provider's credentials; the runner asks when a job
// has attachments. The request is a MediaFetch, the reply an Image (or a
// micro error, in the Nats-Service-Error headers).
const SubjectMediaFetch = "ts.svc.media.fetch"

// MediaFetch asks for one attachment of a user's message.
type MediaFetch struct {
	V     int   `json:"v"`
	User  User  `json:"user"`
	Media Media `json:"media"`
}

func (p *MediaFetch) setVersion()  { p.V = Version }
func (p *MediaFetch) version() int { return p.V }
func (p *MediaFetch) validate() error {
	if p.Media.URL == "" {
		return fmt.Errorf("no media url")
	}
	return p.User.Validate()
}

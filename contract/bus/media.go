package bus

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/textslash/textslash/contract"
)

// PutImage stores an image in the media object store under a fresh
// unguessable id, with its Content-Type as an object header, and describes
// it for an image event. Width and height are the caller's to fill in.
// Data that is not an image of contentType is refused with
// ErrInvalidPayload.
func PutImage(ctx context.Context, store jetstream.ObjectStore, contentType string, data []byte) (contract.Image, error) {
	if !contract.IsImage(contentType) {
		return contract.Image{}, fmt.Errorf("%w: content type %q", contract.ErrInvalidPayload, contentType)
	}
	if got := http.DetectContentType(data); got != contentType {
		return contract.Image{}, fmt.Errorf("%w: data is %s, not %s", contract.ErrInvalidPayload, got, contentType)
	}
	img := contract.Image{ID: nuid.Next(), ContentType: contentType, Size: len(data)}
	meta := jetstream.ObjectMeta{Name: img.ID, Headers: nats.Header{"Content-Type": []string{contentType}}}
	if _, err := store.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return contract.Image{}, fmt.Errorf("store image: %w", err)
	}
	return img, nil
}

// PutFile stores any file in the media object store under a fresh
// unguessable id, with its Content-Type as an object header. Images go
// through PutImage, which checks them; a file's name is made safe
// (SafeName).
func PutFile(ctx context.Context, store jetstream.ObjectStore, contentType, name string, data []byte) (contract.Image, error) {
	if contract.IsImage(contentType) {
		return PutImage(ctx, store, contentType, data)
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	f := contract.Image{ID: nuid.Next(), ContentType: contentType, Size: len(data)}
	if name != "" {
		f.Name = contract.SafeName(name)
	}
	meta := jetstream.ObjectMeta{Name: f.ID, Headers: nats.Header{"Content-Type": []string{contentType}}}
	if _, err := store.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return contract.Image{}, fmt.Errorf("store file: %w", err)
	}
	return f, nil
}

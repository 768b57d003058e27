package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/contract"
)

// MediaRef is the link to an image or file of a reply that the kit puts
// in channel.Message.Media (the channel's own media store, media-<name>,
// which the media service does not serve: a channel uploads the bytes):
// stored:<object id> for an image, stored:<object id>/<name> for a file
// (its name made safe, contract.SafeName). Kit.Media reads it.
func MediaRef(img contract.Image) string {
	if contract.IsImage(img.ContentType) {
		return contract.StoredMedia + img.ID
	}
	return contract.StoredMedia + img.ID + "/" + contract.SafeName(img.Name)
}

// Media reads the image or file a MediaRef link names from the channel's
// own media store, media-<name> (contract.MediaBucketOf; objects live
// contract.MediaTTL, 30 minutes by default):
// ErrNotStored for any other link, jetstream.ErrObjectNotFound once it
// expired.
func (k *Kit) Media(ctx context.Context, ref string) (channel.Attachment, error) {
	rest, ok := strings.CutPrefix(ref, contract.StoredMedia)
	id, name, _ := strings.Cut(rest, "/")
	if !ok || id == "" {
		return channel.Attachment{}, fmt.Errorf("%w: %q", ErrNotStored, ref)
	}
	bucket := contract.MediaBucketOf(k.ch.Name())
	store, err := k.js.ObjectStore(ctx, bucket)
	if err != nil {
		return channel.Attachment{}, fmt.Errorf("object store %s: %w", bucket, err)
	}
	res, err := store.Get(ctx, id)
	if err != nil {
		return channel.Attachment{}, fmt.Errorf("media %s: %w", id, err)
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return channel.Attachment{}, fmt.Errorf("media %s: %w", id, err)
	}
	a := channel.Attachment{ContentType: info.Headers.Get("Content-Type"), Name: name}
	if a.Name == "" {
		a.Name = "image" + contract.ImageExt(a.ContentType)
	}
	buf, err := io.ReadAll(res)
	if err != nil {
		return channel.Attachment{}, fmt.Errorf("media %s: %w", id, err)
	}
	a.Data = buf
	return a, nil
}

// attach reads ref for a send (egress.Channel.Attach): gone (expired) or
// not a stored link, another try cannot help; the store not answering,
// it may.
func (k *Kit) attach(ctx context.Context, ref string) (channel.Attachment, error) {
	a, err := k.Media(ctx, ref)
	switch {
	case errors.Is(err, ErrNotStored) || errors.Is(err, jetstream.ErrObjectNotFound):
		return a, &channel.SendError{Err: fmt.Errorf("reply's file: %w", err), Permanent: true}
	case err != nil:
		return a, &channel.SendError{Err: fmt.Errorf("reply's file: %w", err)}
	}
	return a, nil
}

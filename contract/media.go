package contract

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MediaBucketOf is the object store holding the images and files of
// channel's people: BucketMedia for a built-in channel (IsBuiltIn), whose
// objects the media service serves by URL; media-<channel> for a plug-in
// channel, which reads its own (Options.Channels provisions it). Each
// plug-in channel has a store of its own because an object store's
// subjects ($O.<bucket>.C.<nuid>, $O.<bucket>.M.<name>) cannot tell one
// writer's objects from another's: NATS permissions can grant a channel's
// login a bucket, never part of one.
func MediaBucketOf(channel string) string {
	if IsBuiltIn(channel) {
		return BucketMedia
	}
	return BucketMedia + "-" + channel
}

// The content types of images: what every channel shows as an image.
// Other files are documents.
const (
	ImageJPEG = "image/jpeg"
	ImagePNG  = "image/png"
)

// IsImage reports whether contentType is an image every channel shows as
// one: JPEG or PNG (ImageJPEG, ImagePNG). Other files are documents.
func IsImage(contentType string) bool {
	return contentType == ImageJPEG || contentType == ImagePNG
}

// ImageExt is the extension an image's file name ends with: ".png" for a
// PNG, ".jpeg" for a JPEG (and anything else named as an image).
func ImageExt(contentType string) string {
	if contentType == ImagePNG {
		return ".png"
	}
	return ".jpeg"
}

// SafeName is name made safe for a file in a workspace, a URL path and a
// download: its last path element, with letters, digits, '.', '-' and '_'
// kept and anything else replaced by '_', no leading dot, at most 100
// bytes (the extension kept); "file" when nothing is left.
func SafeName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	name = strings.TrimLeft(string(b), "._")
	if len(name) > 100 {
		ext := filepath.Ext(name)
		if len(ext) > 10 {
			ext = ""
		}
		name = name[:100-len(ext)] + ext
	}
	if name == "" {
		return "file"
	}
	return name
}

// MediaFetchSubject is the request-reply service that copies an
// attachment a person sent on channel from the provider into the media
// store: ts.svc.media.fetch.<channel>. Whoever holds the channel's
// credentials serves it (ingress for WhatsApp, SMS and Telegram; a
// plug-in channel's kit for its own); the runner asks when a job has
// attachments. The request is a MediaFetch, the reply an Image (or a
// micro error, in the Nats-Service-Error headers).
func MediaFetchSubject(channel string) string { return subjectMediaFetch + "." + channel }

// subjectMediaFetch starts every channel's media fetch subject.
const subjectMediaFetch = "ts.svc.media.fetch"

// MediaFetch asks for one attachment of a user's message.
type MediaFetch struct {
	V     int   `json:"v"`
	User  User  `json:"user"`
	Media Media `json:"media"`
}

func (p *MediaFetch) setVersion() { p.V = Version }

func (p *MediaFetch) version() int { return p.V }

func (p *MediaFetch) validate() error {
	if p.Media.URL == "" {
		return fmt.Errorf("no media url")
	}
	return p.User.Validate()
}

// MediaSigner makes and checks image URLs. A URL names one image, an
// expiry, and an HMAC-SHA256 of both under a key media and egress share
// (TEXTSLASH_MEDIA_KEY): a guessed id has no valid signature, and a link
// shared after its expiry is refused even while the image still exists.
type MediaSigner struct {
	key []byte
	ttl time.Duration
}

// NewMediaSigner signs URLs valid for ttl with key.
func NewMediaSigner(key []byte, ttl time.Duration) (MediaSigner, error) {
	if len(key) < 16 {
		return MediaSigner{}, errors.New("media key: at least 16 bytes")
	}
	if ttl <= 0 {
		ttl = MediaTTL
	}
	return MediaSigner{key: key, ttl: ttl}, nil
}

// URL is the signed path and query of img, valid from now for the TTL.
func (s MediaSigner) URL(img Image, now time.Time) string { return s.SignPath(MediaPath(img), now) }

// SignPath is path with the query that makes it valid from now for the TTL.
func (s MediaSigner) SignPath(path string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(s.ttl).Unix(), 10)
	return path + "?e=" + exp + "&s=" + s.sign(path, exp)
}

// Check verifies the e and s query values of a request for path:
// ErrMediaSignature unless they sign it and have not expired.
func (s MediaSigner) Check(path, e, sig string, now time.Time) error {
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || len(sig) != 22 || len(s.key) == 0 {
		return ErrMediaSignature
	}
	if !hmac.Equal([]byte(sig), []byte(s.sign(path, e))) {
		return ErrMediaSignature
	}
	if now.Unix() > exp {
		return ErrMediaSignature
	}
	return nil
}

func (s MediaSigner) sign(path, exp string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(path + "\n" + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// StoredMedia is the scheme of an attachment's URL when ingress took the
// file itself (a web chat upload): the rest is its object in the media
// store, and nothing needs fetching.
const StoredMedia = "stored:"

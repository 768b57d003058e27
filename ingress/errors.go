package ingress

import (
	"errors"
	"fmt"
)

// ErrTooLarge: an attachment over MediaMaxBytes (download,
// telegramDownload, or what a Fetcher returned); the media fetch service
// answers 413, and the runner tells the person.
var ErrTooLarge = fmt.Errorf("larger than %d MB", MediaMaxBytes>>20)

// ErrNotMine: a Fetcher was asked for a URL that is not an attachment of
// its channel (another account's, a made-up one); the media fetch
// service answers 403 and fetches nothing.
var ErrNotMine = errors.New("not a media URL of this channel")

// ErrNotAllowed: Inbox.Admit refused a message of a person neither allowed
// nor pairing in with a code; it is dropped on purpose (a provider should
// not retry it), and the person is told nothing.
var ErrNotAllowed = errors.New("not on the allowlist nor paired in")

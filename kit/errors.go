package kit

import (
	"errors"

	"github.com/textslash/textslash/ingress"
)

var (
	// ErrNotAllowed: Publish dropped a message of a person neither on
	// Channel.Allowed nor paired in (and no pairing code); the person is
	// told nothing, and the provider should not retry it.
	ErrNotAllowed = ingress.ErrNotAllowed
	// ErrNotMine is what Channel.Fetch returns for a URL that is no
	// attachment of the channel: the fetch is refused (403).
	ErrNotMine = ingress.ErrNotMine
	// ErrTooLarge is what Channel.Fetch may return for an attachment over
	// ingress.MediaMaxBytes (larger data is refused all the same): the
	// runner tells the person it was too large (413).
	ErrTooLarge = ingress.ErrTooLarge
	// ErrNotStored: Kit.Media was given a link that is not MediaRef's.
	ErrNotStored = errors.New("not a stored:<id> link of the media store")
)

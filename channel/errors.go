package channel

import (
	"errors"
	"fmt"
)

// MaxFetchBytes caps an attachment a person sends: Twilio passes on up to
// 5 MB per image (16 MB for other media), Telegram 20 MB per file to bots.
const MaxFetchBytes = 16 << 20

var (
	// ErrNotAllowed: Host.Publish dropped a message of a person neither
	// allowed nor pairing in with a code, on purpose (a provider should
	// not retry it); the person is told nothing.
	ErrNotAllowed = errors.New("not on the allowlist nor paired in")
	// ErrNotMine: a Fetcher was asked for a URL that is not an attachment
	// of its channel (another account's, a made-up one); the fetch is
	// refused (403) and fetches nothing.
	ErrNotMine = errors.New("not a media URL of this channel")
	// ErrTooLarge: an attachment over MaxFetchBytes; the fetch is refused
	// (413), and the runner tells the person it was too large.
	ErrTooLarge = fmt.Errorf("larger than %d MB", MaxFetchBytes>>20)
	// ErrGone is what a Places edit returns for a message the provider no
	// longer has (deleted, or too old to edit): it is posted anew.
	ErrGone = errors.New("channel: the message is gone")
)

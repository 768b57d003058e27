package egress

import "errors"

var (
	// errUndeliverable: the provider refused a message for good; the dead
	// letter is published and the event is done with (failed, hold).
	errUndeliverable = errors.New("undeliverable")
	// errHeld: the message is held for the person; the event's next parts
	// follow it there (hold, heldBefore, sendOnce).
	errHeld = errors.New("held until the person writes again")
	// errHeldFull: holding one more message would take the person's held
	// messages over heldMaxBytes; hold drops it as undeliverable instead.
	errHeldFull = errors.New("held messages full")
	// errExpired: the media service no longer has an image (notionMirror.fetch).
	errExpired = errors.New("expired")
	// errNoStatus: the database lacks the configured status property
	// (notionMirror.statusProperty); the page is told, as for Notion's own
	// refusals.
	errNoStatus = errors.New("the database has no status or select property")
)

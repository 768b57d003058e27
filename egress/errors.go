package egress

import "errors"

var (
	// errUndeliverable: the provider refused a message for good; its dead
	// letter is published and the event is done with.
	errUndeliverable = errors.New("undeliverable")
	// errHeld: the message is held for the person until they write again
	// (WhatsApp's reply window); the event's next parts follow it there.
	errHeld = errors.New("held until the person writes again")
	// errHeldFull: one more message would take the person's held messages
	// over heldMaxBytes; it is dropped as undeliverable instead.
	errHeldFull = errors.New("held messages full")
)

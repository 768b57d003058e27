package discord

import "errors"

var (
	// ErrNotAttachment: Fetch was given a URL that is not on Discord's
	// CDN (Config.CDNURLs), which it refuses to download.
	ErrNotAttachment = errors.New("not a Discord attachment URL")
	// ErrTooLarge: an attachment is larger than Config.MaxMediaBytes.
	ErrTooLarge = errors.New("attachment too large")
	// ErrGone: Discord's CDN no longer serves the attachment (its signed
	// URL expired, or the message was deleted).
	ErrGone = errors.New("attachment gone")
)

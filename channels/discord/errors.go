package discord

import "errors"

// Fetch refuses a URL off Discord's CDN with channel.ErrNotMine and an
// attachment over Config.MaxMediaBytes with channel.ErrTooLarge, as the kit
// asks.

// ErrGone: Discord's CDN no longer serves the attachment (its signed URL
// expired, or the message was deleted).
var ErrGone = errors.New("attachment gone")

package slack

import (
	"errors"
	"fmt"

	"github.com/textslash/textslash/channel"
)

// Errors the package returns on purpose; callers use errors.Is.
var (
	// ErrBadSignature: an Events API request whose X-Slack-Signature does
	// not match the signing secret, or whose timestamp is more than five
	// minutes away (a replay). The request is refused with 401.
	ErrBadSignature = errors.New("slack: request not signed by Slack")
	// ErrTooLarge: a file a person sent is larger than MaxFetchBytes; it
	// is a channel.ErrTooLarge (the person is told).
	ErrTooLarge = fmt.Errorf("slack: file too large: %w", channel.ErrTooLarge)
	// ErrNotSlackFile: Fetch was given a URL that is not Slack's (nor the
	// fake's API host): the bot token is never sent elsewhere. It is a
	// channel.ErrNotMine (the fetch is refused).
	ErrNotSlackFile = fmt.Errorf("slack: not a Slack file URL: %w", channel.ErrNotMine)
	// ErrNoFile: Slack answered a file download with its sign-in page, as
	// it does when the token lacks files:read.
	ErrNoFile = errors.New("slack: file not readable with the bot token (files:read scope?)")
	// ErrNotRunning: an Events API request came before Run had the
	// channel's Host.
	ErrNotRunning = errors.New("slack: not running yet")
)

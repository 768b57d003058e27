package slack

import "errors"

// Errors the package returns on purpose; callers use errors.Is.
var (
	// ErrBadSignature: an Events API request whose X-Slack-Signature does
	// not match the signing secret, or whose timestamp is more than five
	// minutes away (a replay). The request is refused with 401.
	ErrBadSignature = errors.New("slack: request not signed by Slack")
	// ErrTooLarge: a file a person sent is larger than MaxFetchBytes.
	ErrTooLarge = errors.New("slack: file too large")
	// ErrNotSlackFile: Fetch was given a URL that is not Slack's (nor the
	// fake's API host): the bot token is never sent elsewhere.
	ErrNotSlackFile = errors.New("slack: not a Slack file URL")
	// ErrNoFile: Slack answered a file download with its sign-in page, as
	// it does when the token lacks files:read.
	ErrNoFile = errors.New("slack: file not readable with the bot token (files:read scope?)")
)

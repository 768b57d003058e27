package slack

import (
	"errors"
	"net/http"

	"github.com/textslash/textslash/channel"

	api "github.com/slack-go/slack"
)

// retryable are the errors Slack names its own, which another try may
// mend (docs.slack.dev: "internal_error", "fatal_error",
// "service_unavailable", "request_timeout", "ratelimited").
var retryable = map[string]bool{"internal_error": true, "fatal_error": true, "service_unavailable": true,
	"request_timeout": true, "ratelimited": true}

// sendError classifies a failed Web API call as an *channel.SendError: a
// 429 waits its Retry-After; Slack's own failures (the retryable codes, a
// 5xx) and the network's are tried again; any other refusal
// (channel_not_found, not_in_channel, invalid_auth, missing_scope,
// invalid_blocks, msg_too_long…) is Permanent. The token never shows in
// slack-go's errors.
func sendError(err error) error {
	var se *channel.SendError
	var limited *api.RateLimitedError
	var refused api.SlackErrorResponse
	var status api.StatusCodeError
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &limited):
		return &channel.SendError{Err: err, Code: http.StatusTooManyRequests, Status: http.StatusTooManyRequests, RetryAfter: limited.RetryAfter}
	case errors.As(err, &refused):
		return &channel.SendError{Err: err, Permanent: !retryable[refused.Err]}
	case errors.As(err, &status):
		return &channel.SendError{Err: err, Status: status.Code, Permanent: status.Code < 500}
	}
	return &channel.SendError{Err: err}
}

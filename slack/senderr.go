package slack

import (
	"errors"
	"net/http"

	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/egress"
)

// retryable are the errors Slack names its own, which another try may
// mend (docs.slack.dev: "internal_error", "fatal_error",
// "service_unavailable", "request_timeout", "ratelimited").
var retryable = map[string]bool{"internal_error": true, "fatal_error": true, "service_unavailable": true,
	"request_timeout": true, "ratelimited": true}

// sendError classifies a failed Web API call as an *egress.SendError: a
// 429 waits its Retry-After; Slack's own failures (the retryable codes, a
// 5xx) and the network's are tried again; any other refusal
// (channel_not_found, not_in_channel, invalid_auth, missing_scope,
// invalid_blocks, msg_too_long…) is Permanent. The token never shows in
// slack-go's errors.
func sendError(err error) error {
	var se *egress.SendError
	var limited *api.RateLimitedError
	var refused api.SlackErrorResponse
	var status api.StatusCodeError
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &limited):
		return &egress.SendError{Err: err, Code: http.StatusTooManyRequests, Status: http.StatusTooManyRequests, RetryAfter: limited.RetryAfter}
	case errors.As(err, &refused):
		return &egress.SendError{Err: err, Permanent: !retryable[refused.Err]}
	case errors.As(err, &status):
		return &egress.SendError{Err: err, Status: status.Code, Permanent: status.Code < 500}
	}
	return &egress.SendError{Err: err}
}

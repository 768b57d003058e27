// Twilio's errors: the codes the fake answers with, their messages, and
// writeError, which writes Twilio's JSON error body.

package twiliotest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Twilio error codes the fake answers with on its own. Any code can be
// programmed with FailNext and FailTo.
const (
	CodeAuthenticate     = 20003 // wrong or missing credentials (401)
	CodeNotFound         = 20404 // no such resource (404)
	CodeFromRequired     = 21603 // neither From nor MessagingServiceSid
	CodeToRequired       = 21604
	CodeBodyTooLong      = 21617 // Body over 1600 characters
	CodeBodyOrMedia      = 21619 // neither Body, MediaUrl nor ContentSid
	CodeTooManyMedia     = 21623 // over 10 MediaUrl, or over 1 on WhatsApp
	CodeChannelMismatch  = 21910 // From and To on different channels
	CodeOutsideWindow    = 63016 // WhatsApp free-form send outside 24 hours
	CodeTooManyRequests  = 20429
	CodeUnreachable      = 30003 // delivery: handset unreachable
	CodeUnknownRecipient = 30005 // delivery: unknown or inactive destination
)

// errorMessages are Twilio's messages for the codes tests are likely to use.
var errorMessages = map[int]string{
	CodeAuthenticate:     "Authenticate",
	CodeNotFound:         "The requested resource was not found",
	CodeFromRequired:     "A 'From' phone number is required.",
	CodeToRequired:       "A 'To' phone number is required.",
	CodeBodyTooLong:      "The concatenated message body exceeds the 1600 character limit.",
	CodeBodyOrMedia:      "A text message body or media urls must be specified.",
	CodeTooManyMedia:     "Number of media files exceeds allowed limit",
	CodeChannelMismatch:  "Invalid From and To pair. From and To should be of the same channel",
	CodeOutsideWindow:    "Failed to send freeform message because you are outside the allowed window. If you are using WhatsApp, please use a Message Template.",
	CodeTooManyRequests:  "Too Many Requests",
	CodeUnreachable:      "Unreachable destination handset",
	CodeUnknownRecipient: "Unknown destination handset",
	20500:                "An internal server error has occurred",
	21211:                "Invalid 'To' Phone Number",
	21610:                "Attempt to send to unsubscribed recipient",
}

// writeError writes Twilio's JSON error body; msg "" is Twilio's message
// for code.
func writeError(w http.ResponseWriter, status, code int, msg string) {
	if msg == "" {
		msg = errorMessages[code]
	}
	if msg == "" {
		msg = fmt.Sprintf("twiliotest: error %d", code)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"code":      code,
		"message":   msg,
		"more_info": fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code),
		"status":    status,
	})
}

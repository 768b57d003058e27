package egress

import (
	"context"
	"fmt"
	"time"

	"github.com/textslash/textslash/contract"
)

// A Sender delivers messages to the people of one channel (Twilio's
// WhatsApp and SMS today).
type Sender interface {
	// Send delivers one message and returns the provider's id for it.
	// Failures are *SendError.
	Send(ctx context.Context, u contract.User, m Message) (string, error)
}

// Message is one message as a channel sends it: text and image URLs
// (and file URLs, contract.MediaPath's /files/ links).
type Message struct {
	Body  string
	Media []string
	// Document: Media is one file, to be sent as a document (on channels
	// whose Rules keep DocumentsApart).
	Document bool `json:",omitempty"`
	// Progress: a line about the run in progress (JobID), which a channel
	// that can edit messages shows in one status message.
	Progress bool
	// JobID is the job the message is about ("" for none: a notice): the
	// id of the person's message that started it, which tells a channel
	// where that message was written (Slack's <conversation>-<ts>).
	JobID string
	// Choices are the replies that answer the message (a permission
	// question's yes / no / always, an approval's approve / reject): a
	// channel with buttons shows one per choice, whose press sends the
	// choice as the person's message. Channels without buttons ignore
	// them: the body says what to reply.
	Choices []string
	// Links are links handed to the person (preview links): a channel
	// with buttons shows one that opens each; the body has their URLs.
	Links []contract.Link `json:",omitempty"`
	// Template, when set, is sent instead of Body and Media: an approved
	// template by the provider's id (Twilio's Content SID), which may go
	// out when free-form messages may not (window.go).
	Template string
}

// Finder is a Sender that can tell whether a message reached the provider:
// after a crash between a send and its record, egress asks it rather than
// sending again. Without one, such a message may go out twice.
type Finder interface {
	// Find returns the provider's id of a message like m to u created
	// since then, or "" when there is none.
	Find(ctx context.Context, u contract.User, m Message, since time.Time) (id string, err error)
}

// explainer is a Sender that can tell an operator what its provider's
// error codes mean (Twilio's: twilio.go).
type explainer interface {
	// Explain is the hint for code; "" when there is none.
	Explain(code int) string
}

// explain is what s tells of its provider's error code; "" when s is no
// explainer or knows nothing of code.
func explain(s Sender, code int) string {
	if e, ok := s.(explainer); ok {
		return e.Explain(code)
	}
	return ""
}

// SendError is a failed send.
type SendError struct {
	Err error
	// Permanent: trying again cannot help (a validation error, a number
	// that cannot be reached).
	Permanent bool
	// Code and Status are the provider's error code and HTTP status.
	Code   int
	Status int
	// RetryAfter is the least wait the provider asked for before the
	// next try.
	RetryAfter time.Duration
}

func (e *SendError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("send: code %d: %v", e.Code, e.Err)
	}
	return "send: " + e.Err.Error()
}

func (e *SendError) Unwrap() error { return e.Err }

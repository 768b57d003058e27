package channel

import (
	"fmt"
	"time"

	"github.com/textslash/textslash/contract"
)

// Message is one message as a channel sends it: text and its images and
// files, as links (Media) or, for a channel that uploads them, as bytes
// (Attachments).
type Message struct {
	Body string
	// Media are the links to the message's images and files: the media
	// service's URLs (contract.MediaPath's, /files/ for a file) on a
	// channel whose provider downloads them, the runtime's stored:<id>
	// references on one that uploads them.
	Media []string
	// Attachments are Media's bytes, read by the runtime before Send on a
	// channel that uploads them (a plug-in channel), in Media's order.
	Attachments []Attachment `json:"-"`
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
	// out when free-form messages may not.
	Template string
}

// Attachment is an image or file of a reply, as bytes.
type Attachment struct {
	Data        []byte
	ContentType string // image/jpeg or image/png for an image (contract.IsImage)
	Name        string // a file's name; an image's is made up: image.<ext>
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

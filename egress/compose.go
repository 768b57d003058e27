package egress

import (
	"fmt"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

// Rules are what a channel allows in one message and how replies are cut.
type Rules struct {
	// BodyLimit is the most characters (UTF-16 code units) in one message.
	BodyLimit int
	// MaxMedia is the most images in one message; the first goes with the
	// text, the rest follow in messages of their own.
	MaxMedia int
	// MaxImageBytes: larger images are left out, with a note.
	MaxImageBytes int
	// MaxFileBytes: larger files (not images) are left out, with a note;
	// default MaxImageBytes.
	MaxFileBytes int
	// DocumentsApart: files go in messages of their own, one each
	// (Message.Document), after the images, never with them; the text
	// goes with the first of them when there is no image. Otherwise files
	// are media like images.
	DocumentsApart bool
	// CaptionLimit, when set, is the most characters that go with images
	// in one message; a longer text is sent on its own before them, and
	// an image's own caption (contract.Image.Caption) is cut to it (else
	// to BodyLimit).
	CaptionLimit int
	// Truncate cuts long replies at TruncateAt characters instead of paging
	// them ("Reply MORE").
	Truncate   bool
	TruncateAt int
	// ProgressEvery is the least time between two progress messages to one
	// person; in between, the latest progress waits and older ones are
	// dropped. Every event still travels on NATS.
	ProgressEvery time.Duration
	// TypingEvery, for a Sender that is a Typer, is how often the typing
	// indicator is shown again while a run works (zero: never shown).
	TypingEvery time.Duration
}

// withDefaults is r with the limits it leaves zero taken from d, the
// file limit from the image limit when d has none either, and TruncateAt
// within BodyLimit.
func (r Rules) withDefaults(d Rules) Rules {
	if r.BodyLimit == 0 {
		r.BodyLimit = d.BodyLimit
	}
	if r.MaxMedia == 0 {
		r.MaxMedia = d.MaxMedia
	}
	if r.MaxImageBytes == 0 {
		r.MaxImageBytes = d.MaxImageBytes
	}
	if r.MaxFileBytes == 0 {
		r.MaxFileBytes = d.MaxFileBytes
	}
	if r.MaxFileBytes == 0 {
		r.MaxFileBytes = r.MaxImageBytes
	}
	if r.TruncateAt == 0 || r.TruncateAt > r.BodyLimit {
		r.TruncateAt = max(0, min(1500, r.BodyLimit)) // a BodyLimit below 1 is refused; no second refusal of TruncateAt
	}
	if r.ProgressEvery == 0 {
		r.ProgressEvery = DefaultProgressEvery
	}
	return r
}

// validate refuses the rules (defaulted) that are wrong; path is theirs
// in Config ("Twilio.WhatsApp").
func (r Rules) validate(path string) []error {
	var errs []error
	if r.BodyLimit < 1 {
		errs = append(errs, bad(path+".BodyLimit", r.BodyLimit, "must be at least 1"))
	}
	if r.MaxMedia < 1 {
		errs = append(errs, bad(path+".MaxMedia", r.MaxMedia, "must be at least 1"))
	}
	return append(errs, notNegative(path+".MaxImageBytes", r.MaxImageBytes), notNegative(path+".MaxFileBytes", r.MaxFileBytes),
		notNegative(path+".CaptionLimit", r.CaptionLimit), notNegative(path+".TruncateAt", r.TruncateAt),
		notNegative(path+".ProgressEvery", r.ProgressEvery))
}

// DefaultProgressEvery is the least time between two progress messages to
// one person on a channel whose Rules set none.
const DefaultProgressEvery = 10 * time.Second

// Texts of paging.
const (
	MsgTruncated     = "\n\n[Response truncated]"
	MsgNoMore        = "There is nothing more: that was the whole reply."
	msgTooLarge      = "(%d image(s) too large for this channel were left out.)"
	msgFilesTooLarge = "(Left out: %s too large for this channel.)"
)

// pageFooter ends each page of a long reply.
func pageFooter(i, n int) string {
	if i == n {
		return fmt.Sprintf("\n\n(page %d/%d)", i, n)
	}
	return fmt.Sprintf("\n\nReply MORE for the rest (page %d/%d)", i, n)
}

// compose cuts a reply into the messages a channel sends now, in order,
// and the pages left for "more". Captioned images go after the reply and
// its other images, one message each (captionedMessages).
func (r Rules) compose(text string, images []contract.Image, mediaURL func(contract.Image) string) (msgs []Message, rest []string) {
	images, captioned := r.captionedMessages(images, mediaURL)
	var urls, docs []string
	tooLarge, filesTooLarge := 0, 0
	for _, img := range images {
		switch {
		case contract.IsImage(img.ContentType) && img.Size > r.MaxImageBytes:
			tooLarge++
		case contract.IsImage(img.ContentType):
			urls = append(urls, mediaURL(img))
		case img.Size > r.MaxFileBytes:
			filesTooLarge++
		case r.DocumentsApart:
			docs = append(docs, mediaURL(img))
		default:
			urls = append(urls, mediaURL(img))
		}
	}
	if tooLarge > 0 {
		text += "\n\n" + fmt.Sprintf(msgTooLarge, tooLarge)
	}
	if filesTooLarge > 0 {
		text += "\n\n" + fmt.Sprintf(msgFilesTooLarge, contract.Plural(filesTooLarge, "file"))
	}
	first := text
	switch {
	case pages.Length(text) <= r.BodyLimit:
	case r.Truncate:
		first = pages.Truncate(text, r.TruncateAt, MsgTruncated)
	default:
		ps, err := pages.Split(text, r.BodyLimit, pageFooter)
		if err != nil { // a limit too small for any footer: cut instead
			first = pages.Truncate(text, r.BodyLimit, "")
			break
		}
		first, rest = ps[0], ps[1:]
	}
	if r.CaptionLimit > 0 && len(urls)+len(docs) > 0 && pages.Length(first) > r.CaptionLimit {
		msgs = append(msgs, Message{Body: first})
		first = ""
	}
	msg := Message{Body: first}
	if len(urls) == 0 && len(docs) > 0 {
		msg.Media, msg.Document, docs = docs[:1], true, docs[1:]
	}
	n := min(len(urls), r.MaxMedia)
	if n > 0 {
		msg.Media, urls = urls[:n], urls[n:]
	}
	msgs = append(msgs, msg)
	for len(urls) > 0 {
		n := min(len(urls), r.MaxMedia)
		msgs = append(msgs, Message{Media: urls[:n]})
		urls = urls[n:]
	}
	msgs = append(msgs, captioned...)
	for _, d := range docs {
		msgs = append(msgs, Message{Media: []string{d}, Document: true})
	}
	return msgs, rest
}

// captionedMessages takes the captioned images the channel can send out
// of images: each is a message of its own, its caption the text, cut to
// the channel's caption limit (else its body limit). The rest go with the
// reply as before (an image too large is left there, to be counted out).
func (r Rules) captionedMessages(images []contract.Image, mediaURL func(contract.Image) string) (rest []contract.Image, msgs []Message) {
	limit := r.CaptionLimit
	if limit <= 0 {
		limit = r.BodyLimit
	}
	for _, img := range images {
		if img.Caption == "" || !contract.IsImage(img.ContentType) || img.Size > r.MaxImageBytes {
			rest = append(rest, img)
			continue
		}
		msgs = append(msgs, Message{Body: pages.Truncate(img.Caption, limit, "…"), Media: []string{mediaURL(img)}})
	}
	return rest, msgs
}

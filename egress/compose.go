package egress

import (
	"fmt"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

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
func compose(r channel.Rules, text string, images []contract.Image, mediaURL func(contract.Image) string) (msgs []channel.Message, rest []string) {
	images, captioned := captionedMessages(r, images, mediaURL)
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
		msgs = append(msgs, channel.Message{Body: first})
		first = ""
	}
	msg := channel.Message{Body: first}
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
		msgs = append(msgs, channel.Message{Media: urls[:n]})
		urls = urls[n:]
	}
	msgs = append(msgs, captioned...)
	for _, d := range docs {
		msgs = append(msgs, channel.Message{Media: []string{d}, Document: true})
	}
	return msgs, rest
}

// captionedMessages takes the captioned images the channel can send out
// of images: each is a message of its own, its caption the text, cut to
// the channel's caption limit (else its body limit). The rest go with the
// reply as before (an image too large is left there, to be counted out).
func captionedMessages(r channel.Rules, images []contract.Image, mediaURL func(contract.Image) string) (rest []contract.Image, msgs []channel.Message) {
	limit := r.CaptionLimit
	if limit <= 0 {
		limit = r.BodyLimit
	}
	for _, img := range images {
		if img.Caption == "" || !contract.IsImage(img.ContentType) || img.Size > r.MaxImageBytes {
			rest = append(rest, img)
			continue
		}
		msgs = append(msgs, channel.Message{Body: pages.Truncate(img.Caption, limit, "…"), Media: []string{mediaURL(img)}})
	}
	return rest, msgs
}

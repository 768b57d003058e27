package notion

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf16"
)

// Notion's limits on what a comment carries.
const (
	// MaxAttachments is how many file uploads one comment can carry.
	MaxAttachments = 3
	// maxTextLen is the most a rich text object's text.content may hold,
	// in UTF-16 code units: Notion counts as JavaScript does, so a
	// character outside the Basic Multilingual Plane (most emoji) counts
	// twice.
	maxTextLen = 2000
	// maxRichText is how many rich text objects an array may hold.
	maxRichText = 100
)

// ellipsis ends a comment cut to fit Notion's limits.
const ellipsis = "…"

// Comment adds a comment to page pageID (POST /v1/comments, parent.page_id):
// text split into rich_text items of at most 2000 characters each (Notion's
// limit; at most 100 items, cut beyond with "…"), with up to 3 file uploads
// attached (attachments [{"file_upload_id": id, "type":"file_upload"}]).
func (c *Client) Comment(ctx context.Context, pageID, text string, uploads ...string) error {
	if len(uploads) > MaxAttachments {
		return fmt.Errorf("notion: comment on page %s: %d attachments, Notion takes at most %d", pageID, len(uploads), MaxAttachments)
	}
	if text == "" && len(uploads) == 0 {
		return errors.New("notion: comment on page " + pageID + ": nothing to say")
	}
	type content struct {
		Content string `json:"content"`
	}
	type item struct {
		Type string  `json:"type"`
		Text content `json:"text"`
	}
	type attachment struct {
		FileUploadID string `json:"file_upload_id"`
		Type         string `json:"type"`
	}
	body := struct {
		Parent      map[string]string `json:"parent"`
		RichText    []item            `json:"rich_text"`
		Attachments []attachment      `json:"attachments,omitempty"`
	}{Parent: map[string]string{"page_id": pageID}}
	for _, chunk := range splitText(text) {
		body.RichText = append(body.RichText, item{Type: "text", Text: content{chunk}})
	}
	for _, id := range uploads {
		body.Attachments = append(body.Attachments, attachment{FileUploadID: id, Type: "file_upload"})
	}
	if err := c.callJSON(ctx, http.MethodPost, "/v1/comments", body, nil); err != nil {
		return fmt.Errorf("notion: comment on page %s: %w", pageID, err)
	}
	return nil
}

// splitText cuts text into the contents of rich text objects: at most
// maxRichText pieces of at most maxTextLen UTF-16 code units, never
// splitting a character. Text that does not fit ends in an ellipsis. An
// empty text is one empty piece.
//
// It is not contract/pages, textslash's other cut by UTF-16 code units:
// Notion shows the pieces joined again, so a cut must keep every space and
// may fall anywhere between characters (where pages drops the whitespace
// at a cut and looks for a break), and importing contract would bring its
// module's requirements (nats.go, nats-server) into this one, which needs
// none of them.
func splitText(text string) []string {
	var pieces []string
	var b strings.Builder
	n := 0
	for _, r := range text {
		w := utf16.RuneLen(r)
		if n+w > maxTextLen {
			pieces = append(pieces, b.String())
			b.Reset()
			n = 0
			if len(pieces) == maxRichText {
				return cut(pieces)
			}
		}
		b.WriteRune(r)
		n += w
	}
	return append(pieces, b.String())
}

// cut ends pieces, full and with more text to come, with an ellipsis,
// making room for it in the last piece.
func cut(pieces []string) []string {
	last := []rune(pieces[len(pieces)-1])
	room := maxTextLen - utf16.RuneLen([]rune(ellipsis)[0])
	for unitsLen(last) > room {
		last = last[:len(last)-1]
	}
	pieces[len(pieces)-1] = string(last) + ellipsis
	return pieces
}

// unitsLen is the length of rs in UTF-16 code units.
func unitsLen(rs []rune) int {
	n := 0
	for _, r := range rs {
		n += utf16.RuneLen(r)
	}
	return n
}

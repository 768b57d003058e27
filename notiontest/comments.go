package notiontest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// maxAttachments is how many file uploads one comment can carry.
const maxAttachments = 3

// createComment answers POST /v1/comments (Create comment) on a page, or
// in a discussion a comment on a page started: rich_text, and up to 3
// attachments whose file uploads are "uploaded".
func (s *Server) createComment(r *http.Request, _ []string, body []byte) (any, *apiError) {
	f, e := jsonBody(r, body, "parent", "discussion_id", "rich_text", "attachments", "display_name", "markdown")
	if e != nil {
		return nil, e
	}
	if f["display_name"] != nil || f["markdown"] != nil {
		return nil, s.unsupported("a comment's display_name or markdown")
	}
	p, discussion, e := s.commentTarget(f)
	if e != nil {
		return nil, e
	}
	if isNull(f["rich_text"]) {
		return nil, undefined("body.rich_text")
	}
	text, e := s.richTextInput(f["rich_text"], "body.rich_text")
	if e != nil {
		return nil, e
	}
	uploads, e := s.attachments(f["attachments"])
	if e != nil {
		return nil, e
	}
	c := Comment{Text: text}
	var attached []any
	now := s.now()
	for _, u := range uploads {
		u.attached = true
		c.Files = append(c.Files, File{Name: u.filename, ContentType: u.contentType, Data: slices.Clone(u.data)})
		attached = append(attached, map[string]any{
			"category": category(u.contentType),
			"file": map[string]any{
				"url":         s.URL() + "/files/" + u.id + "/" + u.filename,
				"expiry_time": exactTime(now.Add(time.Hour)),
			},
		})
	}
	if discussion == "" {
		discussion = newID()
		s.discussions[discussion] = p
	}
	s.comments[p.id] = append(s.comments[p.id], c)
	return map[string]any{
		"object": "comment", "id": newID(),
		"parent":           map[string]any{"type": "page_id", "page_id": p.id},
		"discussion_id":    discussion,
		"created_time":     notionTime(now),
		"last_edited_time": notionTime(now),
		"created_by":       s.user(),
		"rich_text":        richTextOut(text),
		"attachments":      orEmpty(attached),
		"display_name":     map[string]any{"type": "integration", "resolved_name": "notiontest"},
		"request_id":       newID(),
	}, nil
}

// commentTarget reads where a comment goes: parent.page_id, or an existing
// discussion_id — exactly one of the two. (A block parent is valid but not
// implemented.)
func (s *Server) commentTarget(f fields) (*page, string, *apiError) {
	hasParent, hasDiscussion := !isNull(f["parent"]), !isNull(f["discussion_id"])
	switch {
	case hasParent && hasDiscussion:
		return nil, "", invalidValue("body.discussion_id", "not present when body.parent is", f["discussion_id"])
	case hasDiscussion:
		d, _, e := f.str("body", "discussion_id", true)
		if e != nil {
			return nil, "", e
		}
		id, ok := canonicalID(d)
		if !ok {
			return nil, "", invalidValue("body.discussion_id", "a valid uuid", f["discussion_id"])
		}
		p := s.discussions[id]
		if p == nil {
			return nil, "", notFound("discussion", id)
		}
		return p, id, nil
	case !hasParent:
		return nil, "", undefined("body.parent")
	}
	parent, e := object(f["parent"], "body.parent", "type", "page_id", "block_id")
	if e != nil {
		return nil, "", e
	}
	if parent["block_id"] != nil {
		return nil, "", s.unsupported("comments on a block")
	}
	typ, hasType, e := parent.str("body.parent", "type", false)
	if e != nil {
		return nil, "", e
	}
	if hasType && typ != "page_id" {
		return nil, "", invalidValue("body.parent.type", "`page_id` or `block_id`", parent["type"])
	}
	pid, _, e := parent.str("body.parent", "page_id", true)
	if e != nil {
		return nil, "", e
	}
	id, ok := canonicalID(pid)
	if !ok {
		return nil, "", invalidValue("body.parent.page_id", "a valid uuid", parent["page_id"])
	}
	p := s.pages[id]
	if p == nil {
		return nil, "", notFound("page", id)
	}
	return p, "", nil
}

// attachments reads a comment's attachments: at most 3, each naming a file
// upload of this integration whose status is "uploaded".
func (s *Server) attachments(raw json.RawMessage) ([]*upload, *apiError) {
	if isNull(raw) {
		return nil, nil
	}
	items, e := array(raw, "body.attachments")
	if e != nil {
		return nil, e
	}
	if len(items) > maxAttachments {
		return nil, invalidRequest("body failed validation: body.attachments.length should be ≤ `%d`, instead was `%d`.", maxAttachments, len(items))
	}
	var uploads []*upload
	for i, item := range items {
		path := fmt.Sprintf("body.attachments[%d]", i)
		a, e := object(item, path, "file_upload_id", "type")
		if e != nil {
			return nil, e
		}
		if typ, ok, e := a.str(path, "type", false); e != nil {
			return nil, e
		} else if ok && typ != "file_upload" {
			return nil, invalidValue(path+".type", "`file_upload`", a["type"])
		}
		raw, _, e := a.str(path, "file_upload_id", true)
		if e != nil {
			return nil, e
		}
		id, ok := canonicalID(raw)
		if !ok {
			return nil, invalidValue(path+".file_upload_id", "a valid uuid", a["file_upload_id"])
		}
		u := s.uploads[id]
		if u == nil {
			return nil, notFound("file_upload", id)
		}
		if u.status != "uploaded" {
			return nil, invalidRequest("File upload %s has status `%s`; only a file upload with status `uploaded` can be attached.", id, u.status)
		}
		uploads = append(uploads, u)
	}
	return uploads, nil
}

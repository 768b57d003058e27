package notiontest

import (
	"regexp"
	"strings"
	"time"
	"unicode/utf16"
)

// This file renders the fake's state as Notion's objects (database, data
// source, page, block, comment, file upload), with the fields the
// reference lists for API version 2025-09-03.

// notionTime is t as Notion shows created_time and last_edited_time: UTC,
// rounded down to the minute (Notion has rounded them since July 2021).
func notionTime(t time.Time) string {
	return t.UTC().Truncate(time.Minute).Format("2006-01-02T15:04:05.000Z")
}

// exactTime is t as Notion shows other times (expiry_time): to the
// millisecond.
func exactTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// richTextOut is text as Notion returns rich text: objects of at most 2000
// characters each (as Notion stores them), none for "".
func richTextOut(text string) []any {
	out := []any{}
	units := utf16.Encode([]rune(text))
	for len(units) > 0 {
		n := min(len(units), maxTextContent)
		if n < len(units) && utf16.IsSurrogate(rune(units[n-1])) {
			n-- // keep a surrogate pair together
		}
		chunk := string(utf16.Decode(units[:n]))
		units = units[n:]
		out = append(out, map[string]any{
			"type": "text",
			"text": map[string]any{"content": chunk, "link": nil},
			"annotations": map[string]any{
				"bold": false, "italic": false, "strikethrough": false,
				"underline": false, "code": false, "color": "default",
			},
			"plain_text": chunk,
			"href":       nil,
		})
	}
	return out
}

// user is a partial user object: the integration's bot.
func (s *Server) user() map[string]any {
	return map[string]any{"object": "user", "id": s.bot}
}

var nonWord = regexp.MustCompile(`[^\p{L}\p{N}]+`)

// notionURL is the web address of an object titled title: the title's
// words joined by dashes, then the id without dashes.
func notionURL(title, id string) string {
	slug := strings.Trim(nonWord.ReplaceAllString(title, "-"), "-")
	hexID := strings.ReplaceAll(id, "-", "")
	if slug == "" {
		return "https://www.notion.so/" + hexID
	}
	return "https://www.notion.so/" + slug + "-" + hexID
}

func (s *Server) databaseJSON(db *database) map[string]any {
	ds := db.source
	return map[string]any{
		"object": "database", "id": db.id,
		"title":            richTextOut(ds.title),
		"description":      []any{},
		"parent":           map[string]any{"type": "workspace", "workspace": true},
		"is_inline":        false,
		"in_trash":         false,
		"is_locked":        false,
		"created_time":     notionTime(db.created),
		"last_edited_time": notionTime(db.created),
		"data_sources":     []any{map[string]any{"id": ds.id, "name": ds.title}},
		"icon":             nil,
		"cover":            nil,
		"url":              notionURL(ds.title, db.id),
		"public_url":       nil,
	}
}

func (s *Server) dataSourceJSON(ds *dataSource) map[string]any {
	props := map[string]any{}
	for _, p := range ds.props {
		props[p.name] = propertySchemaJSON(p)
	}
	return map[string]any{
		"object": "data_source", "id": ds.id,
		"created_time":     notionTime(ds.created),
		"last_edited_time": notionTime(ds.created),
		"created_by":       s.user(),
		"last_edited_by":   s.user(),
		"properties":       props,
		"parent":           map[string]any{"type": "database_id", "database_id": ds.db.id},
		"database_parent":  map[string]any{"type": "workspace", "workspace": true},
		"title":            richTextOut(ds.title),
		"description":      []any{},
		"is_inline":        false,
		"archived":         false,
		"in_trash":         false,
		"icon":             nil,
		"cover":            nil,
		"url":              notionURL(ds.title, ds.id),
		"public_url":       nil,
	}
}

// propertySchemaJSON is a property object of a data source's schema.
func propertySchemaJSON(p *property) map[string]any {
	out := map[string]any{"id": p.id, "name": p.name, "type": p.typ, "description": ""}
	options := []any{}
	for _, o := range p.options {
		options = append(options, map[string]any{"id": o.id, "name": o.name, "color": o.color, "description": nil})
	}
	switch p.typ {
	case "title":
		out["title"] = map[string]any{}
	case "select":
		out["select"] = map[string]any{"options": options}
	case "status":
		out["status"] = map[string]any{"options": options, "groups": statusGroups(p)}
	}
	return out
}

// statusGroups puts a status property's options in Notion's three groups:
// the first option in To-do, the last in Complete, the others In progress.
func statusGroups(p *property) []any {
	ids := [3][]string{{}, {}, {}}
	for i, o := range p.options {
		g := 1
		switch {
		case i == 0:
			g = 0
		case i == len(p.options)-1:
			g = 2
		}
		ids[g] = append(ids[g], o.id)
	}
	names := [3]string{"To-do", "In progress", "Complete"}
	colors := [3]string{"gray", "blue", "green"}
	var out []any
	for g := range 3 {
		out = append(out, map[string]any{"id": p.id + "-" + names[g], "name": names[g], "color": colors[g], "option_ids": ids[g]})
	}
	return out
}

func (s *Server) pageJSON(p *page) map[string]any {
	props := map[string]any{}
	for _, prop := range p.source.props {
		props[prop.name] = propertyValueJSON(p, prop)
	}
	return map[string]any{
		"object": "page", "id": p.id,
		"created_time":     notionTime(p.created),
		"last_edited_time": notionTime(p.edited),
		"created_by":       s.user(),
		"last_edited_by":   s.user(),
		"cover":            nil,
		"icon":             nil,
		"parent":           map[string]any{"type": "data_source_id", "data_source_id": p.source.id, "database_id": p.source.db.id},
		"archived":         false,
		"in_trash":         false,
		"is_locked":        false,
		"properties":       props,
		"url":              notionURL(p.title, p.id),
		"public_url":       nil,
	}
}

// propertyValueJSON is page p's value of property prop.
func propertyValueJSON(p *page, prop *property) map[string]any {
	out := map[string]any{"id": prop.id, "type": prop.typ}
	switch prop.typ {
	case "title":
		out["title"] = richTextOut(p.title)
	case "status", "select":
		if o := p.values[prop]; o != nil {
			out[prop.typ] = map[string]any{"id": o.id, "name": o.name, "color": o.color}
		} else {
			out[prop.typ] = nil
		}
	}
	return out
}

func (s *Server) blockJSON(b *block) map[string]any {
	content := map[string]any{}
	if b.typ != "divider" && b.typ != "table_of_contents" && b.typ != "breadcrumb" {
		content["rich_text"] = richTextOut(b.text)
		content["color"] = "default"
	}
	switch b.typ {
	case "to_do":
		content["checked"] = false
	case "code":
		content["language"] = "plain text"
		content["caption"] = []any{}
		delete(content, "color")
	case "callout":
		content["icon"] = nil
	case "heading_1", "heading_2", "heading_3":
		content["is_toggleable"] = false
	case "table_of_contents":
		content["color"] = "default"
	}
	return map[string]any{
		"object": "block", "id": b.id,
		"parent":           map[string]any{"type": "page_id", "page_id": b.page.id},
		"created_time":     notionTime(b.created),
		"last_edited_time": notionTime(b.created),
		"created_by":       s.user(),
		"last_edited_by":   s.user(),
		"has_children":     false,
		"archived":         false,
		"in_trash":         false,
		"type":             b.typ,
		b.typ:              content,
	}
}

func (s *Server) uploadJSON(u *upload) map[string]any {
	out := map[string]any{
		"object": "file_upload", "id": u.id,
		"created_time":     exactTime(u.created),
		"last_edited_time": exactTime(u.created),
		"created_by":       map[string]any{"id": s.bot, "type": "bot"},
		"archived":         false,
		"status":           u.status,
		"filename":         nilIfEmpty(u.filename),
		"content_type":     nilIfEmpty(u.contentType),
		"content_length":   nil,
		"expiry_time":      nil,
		"request_id":       newID(),
	}
	if u.status == "uploaded" {
		out["content_length"] = len(u.data)
	}
	if u.status == "pending" {
		out["upload_url"] = s.URL() + "/v1/file_uploads/" + u.id + "/send"
	}
	if !u.attached {
		out["expiry_time"] = exactTime(u.created.Add(time.Hour))
	}
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// category is the attachment category Notion gives a file of content type
// ct: audio, image, pdf, video, or else productivity.
func category(ct string) string {
	switch {
	case strings.HasPrefix(ct, "audio/"):
		return "audio"
	case strings.HasPrefix(ct, "image/"):
		return "image"
	case strings.HasPrefix(ct, "video/"):
		return "video"
	case ct == "application/pdf":
		return "pdf"
	}
	return "productivity"
}

// listJSON is a page of a paginated list: results, and the cursor of what
// follows ("" for none).
func listJSON(typ string, results []any, next string) map[string]any {
	out := map[string]any{
		"object": "list", "results": results,
		"next_cursor": nil, "has_more": next != "",
		"type": typ, typ: map[string]any{},
		"request_id": newID(),
	}
	if next != "" {
		out["next_cursor"] = next
	}
	return out
}

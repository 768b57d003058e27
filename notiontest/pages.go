package notiontest

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// getPage answers GET /v1/pages/{id} (Retrieve a page).
func (s *Server) getPage(r *http.Request, ids []string, _ []byte) (any, *apiError) {
	id, e := pathID(ids[0], "page_id")
	if e != nil {
		return nil, e
	}
	if len(r.URL.Query()) > 0 {
		return nil, s.unsupported("query parameters of Retrieve a page")
	}
	p := s.pages[id]
	if p == nil {
		return nil, notFound("page", id)
	}
	return s.pageJSON(p), nil
}

// pageUpdateFields are the members Update page takes besides properties:
// valid, but not implemented by the fake.
var pageUpdateFields = []string{"icon", "cover", "in_trash", "archived", "is_locked", "template", "erase_content"}

// updatePage answers PATCH /v1/pages/{id} (Update page): it sets title,
// status and select properties, all or none, and bumps last_edited_time.
func (s *Server) updatePage(r *http.Request, ids []string, body []byte) (any, *apiError) {
	id, e := pathID(ids[0], "page_id")
	if e != nil {
		return nil, e
	}
	p := s.pages[id]
	if p == nil {
		return nil, notFound("page", id)
	}
	f, e := jsonBody(r, body, append([]string{"properties"}, pageUpdateFields...)...)
	if e != nil {
		return nil, e
	}
	for _, k := range pageUpdateFields {
		if f[k] != nil {
			return nil, s.unsupported("updating a page's " + k)
		}
	}
	var changes []func()
	if !isNull(f["properties"]) {
		props, e := object(f["properties"], "body.properties")
		if e != nil {
			return nil, e
		}
		for _, name := range slices.Sorted(maps.Keys(props)) {
			change, e := s.propertyUpdate(p, name, props[name])
			if e != nil {
				return nil, e
			}
			changes = append(changes, change)
		}
	}
	for _, change := range changes {
		change()
	}
	p.edited = s.now()
	return s.pageJSON(p), nil
}

// propertyUpdate reads the new value of page p's property nameOrID and
// returns the change that sets it. The value must be of the property's
// type, as Notion answers "Status is expected to be status.".
func (s *Server) propertyUpdate(p *page, nameOrID string, raw json.RawMessage) (func(), *apiError) {
	prop := p.source.property(nameOrID)
	if prop == nil {
		return nil, invalidRequest("%s is not a property that exists.", nameOrID)
	}
	path := "body.properties." + nameOrID
	v, e := object(raw, path, append([]string{"type", "id"}, filterTypes...)...)
	if e != nil {
		return nil, e
	}
	if typ, ok, e := v.str(path, "type", false); e != nil {
		return nil, e
	} else if ok && typ != prop.typ {
		return nil, invalidRequest("%s is expected to be %s.", prop.name, prop.typ)
	}
	for _, k := range filterTypes {
		if v[k] != nil && k != prop.typ {
			return nil, invalidRequest("%s is expected to be %s.", prop.name, prop.typ)
		}
	}
	value, ok := v[prop.typ]
	if !ok {
		return nil, undefined(path + "." + prop.typ)
	}
	path += "." + prop.typ
	if prop.typ == "title" {
		if isNull(value) {
			return nil, invalidValue(path, "an array", value)
		}
		text, e := s.richTextInput(value, path)
		if e != nil {
			return nil, e
		}
		return func() { p.title = text }, nil
	}
	if isNull(value) {
		return func() { p.values[prop] = nil }, nil
	}
	o, e := choice(prop, value, path)
	if e != nil {
		return nil, e
	}
	return func() {
		if !slices.Contains(prop.options, o) {
			prop.options = append(prop.options, o)
		}
		p.values[prop] = o
	}, nil
}

// choice reads a status or select value ({"name": …} or {"id": …}). A
// status must name one of its options: Notion does not create status
// options through the API. A select naming an option it lacks gets a new
// option, as Notion adds it.
func choice(prop *property, raw json.RawMessage, path string) (*option, *apiError) {
	v, e := object(raw, path, "name", "id", "color")
	if e != nil {
		return nil, e
	}
	name, hasName, e := v.str(path, "name", false)
	if e != nil {
		return nil, e
	}
	id, hasID, e := v.str(path, "id", false)
	if e != nil {
		return nil, e
	}
	switch {
	case hasID:
		if o := prop.optionByID(id); o != nil && (!hasName || o.name == name) {
			return o, nil
		}
		return nil, invalidRequest("%s option with id %q does not exist for property %q.", prop.typ, id, prop.name)
	case !hasName:
		return nil, undefined(path + ".name")
	case prop.option(name) != nil:
		return prop.option(name), nil
	case prop.typ == "status":
		return nil, invalidRequest("Invalid status option %q for property %q: status options cannot be created through the API.", name, prop.name)
	case strings.Contains(name, ","):
		return nil, invalidRequest("Select option names cannot contain commas: %q.", name)
	}
	color, _, e := v.str(path, "color", false)
	if e != nil {
		return nil, e
	}
	if color == "" {
		color = "default"
	}
	return &option{id: newID(), name: name, color: color}, nil
}

// blockChildren answers GET /v1/blocks/{id}/children (Retrieve block
// children): a page's top-level blocks; a block's own children, which the
// fake's blocks never have.
func (s *Server) blockChildren(r *http.Request, ids []string, _ []byte) (any, *apiError) {
	id, e := pathID(ids[0], "block_id")
	if e != nil {
		return nil, e
	}
	var blocks []*block
	switch {
	case s.pages[id] != nil:
		blocks = s.pages[id].blocks
	case s.blocks[id] != nil:
	default:
		return nil, notFound("block", id)
	}
	q := r.URL.Query()
	for k := range q {
		if k != "page_size" && k != "start_cursor" {
			return nil, invalidRequest("query failed validation: query.%s should be not present, instead was `%q`.", k, q.Get(k))
		}
	}
	size := 100
	if q.Has("page_size") {
		if size, e = pageSize(json.RawMessage(q.Get("page_size")), "query.page_size"); e != nil {
			return nil, e
		}
	}
	start := 0
	if q.Has("start_cursor") {
		if start, e = findCursor(q.Get("start_cursor"), blocks, func(b *block) string { return b.id }, "query.start_cursor"); e != nil {
			return nil, e
		}
	}
	end := min(start+min(size, listPage), len(blocks))
	var results []any
	for _, b := range blocks[start:end] {
		results = append(results, s.blockJSON(b))
	}
	next := ""
	if end < len(blocks) {
		next = blocks[end].id
	}
	return listJSON("block", orEmpty(results), next), nil
}

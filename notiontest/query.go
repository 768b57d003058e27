package notiontest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// getDatabase answers GET /v1/databases/{id} (Retrieve a database).
func (s *Server) getDatabase(_ *http.Request, ids []string, _ []byte) (any, *apiError) {
	id, e := pathID(ids[0], "database_id")
	if e != nil {
		return nil, e
	}
	db := s.databases[id]
	if db == nil {
		return nil, notFound("database", id)
	}
	return s.databaseJSON(db), nil
}

// getDataSource answers GET /v1/data_sources/{id} (Retrieve a data source).
func (s *Server) getDataSource(_ *http.Request, ids []string, _ []byte) (any, *apiError) {
	id, e := pathID(ids[0], "data_source_id")
	if e != nil {
		return nil, e
	}
	ds := s.sources[id]
	if ds == nil {
		return nil, notFound("data_source", id)
	}
	return s.dataSourceJSON(ds), nil
}

// queryDataSource answers POST /v1/data_sources/{id}/query (Query a data
// source): filter, sorts, start_cursor, page_size.
func (s *Server) queryDataSource(r *http.Request, ids []string, body []byte) (any, *apiError) {
	id, e := pathID(ids[0], "data_source_id")
	if e != nil {
		return nil, e
	}
	ds := s.sources[id]
	if ds == nil {
		return nil, notFound("data_source", id)
	}
	f, e := jsonBody(r, body, "filter", "sorts", "start_cursor", "page_size", "filter_properties", "in_trash", "result_type")
	if e != nil {
		return nil, e
	}
	for _, k := range []string{"filter_properties", "in_trash", "result_type"} {
		if f[k] != nil {
			return nil, s.unsupported("query parameter " + k)
		}
	}
	keep := func(*page) bool { return true }
	if !isNull(f["filter"]) {
		if keep, e = s.filter(ds, f["filter"]); e != nil {
			return nil, e
		}
	}
	order := func(a, b *page) int { return 0 }
	if !isNull(f["sorts"]) {
		if order, e = sorts(ds, f["sorts"]); e != nil {
			return nil, e
		}
	}
	size, e := pageSize(f["page_size"], "body.page_size")
	if e != nil {
		return nil, e
	}
	var matched []*page
	for _, p := range ds.pages {
		if keep(p) {
			matched = append(matched, p)
		}
	}
	slices.SortStableFunc(matched, order)
	start, e := cursorIndex(f, matched, func(p *page) string { return p.id })
	if e != nil {
		return nil, e
	}
	end := min(start+min(size, listPage), len(matched))
	var results []any
	for _, p := range matched[start:end] {
		results = append(results, s.pageJSON(p))
	}
	next := ""
	if end < len(matched) {
		next = matched[end].id
	}
	return listJSON("page_or_data_source", orEmpty(results), next), nil
}

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

// cursorIndex is where in items the body's start_cursor points: the fake's
// cursors are the id of the first item of the next page. An unknown cursor
// is refused.
func cursorIndex[T any](f fields, items []T, id func(T) string) (int, *apiError) {
	cursor, ok, e := f.str("body", "start_cursor", false)
	if e != nil || !ok {
		return 0, e
	}
	return findCursor(cursor, items, id, "body.start_cursor")
}

func findCursor[T any](cursor string, items []T, id func(T) string, path string) (int, *apiError) {
	for i, it := range items {
		if id(it) == cursor {
			return i, nil
		}
	}
	where, _, _ := strings.Cut(path, ".")
	return 0, invalidRequest("%s failed validation: %s should be a cursor returned by a previous request, instead was `%q`.", where, path, cursor)
}

// filterTypes are the filter condition keys a property filter may hold
// (one of them); only status, select and title are implemented.
var filterTypes = []string{
	"title", "rich_text", "number", "checkbox", "select", "multi_select", "status",
	"date", "people", "files", "url", "email", "phone_number", "relation",
	"created_by", "created_time", "last_edited_by", "last_edited_time",
	"formula", "unique_id", "rollup", "verification",
}

// property finds a property of ds by name or id, as filters and updates
// name them.
func (ds *dataSource) property(nameOrID string) *property {
	for _, p := range ds.props {
		if p.name == nameOrID || p.id == nameOrID {
			return p
		}
	}
	return nil
}

// filter reads a query's filter: one property filter on a status, select
// or title property. Compound (and/or) and timestamp filters are valid
// but not implemented.
func (s *Server) filter(ds *dataSource, raw json.RawMessage) (func(*page) bool, *apiError) {
	f, e := object(raw, "body.filter", append([]string{"property", "and", "or", "timestamp", "type"}, filterTypes...)...)
	if e != nil {
		return nil, e
	}
	if f["and"] != nil || f["or"] != nil || f["timestamp"] != nil {
		return nil, s.unsupported("compound and timestamp filters")
	}
	name, _, e := f.str("body.filter", "property", true)
	if e != nil {
		return nil, e
	}
	prop := ds.property(name)
	if prop == nil {
		return nil, invalidRequest("Could not find property with name or id: %s", name)
	}
	var conds []string
	for _, k := range filterTypes {
		if f[k] != nil {
			conds = append(conds, k)
		}
	}
	if len(conds) != 1 {
		return nil, invalidRequest("body failed validation: body.filter should have exactly one filter condition (one of %s), instead had %d.", strings.Join(filterTypes, ", "), len(conds))
	}
	if conds[0] != prop.typ {
		return nil, invalidRequest("body failed validation: body.filter.%s does not match the type of property %q, which is %s.", conds[0], prop.name, prop.typ)
	}
	path := "body.filter." + prop.typ
	if prop.typ == "title" {
		return titleFilter(f[prop.typ], path)
	}
	return choiceFilter(prop, f[prop.typ], path)
}

// condition reads a filter condition object (at path) that holds exactly
// one of keys, and returns that key and its value.
func condition(raw json.RawMessage, path string, keys ...string) (string, json.RawMessage, *apiError) {
	c, e := object(raw, path, keys...)
	if e != nil {
		return "", nil, e
	}
	if len(c) != 1 {
		return "", nil, invalidValue(path, "an object with exactly one of "+strings.Join(keys, ", "), raw)
	}
	for k, v := range c {
		return k, v, nil
	}
	panic("unreachable")
}

// choiceFilter reads a status or select filter condition. An equals or
// does_not_equal naming a status option that does not exist is refused
// (Notion checks status options); for a select it just matches nothing.
func choiceFilter(prop *property, raw json.RawMessage, path string) (func(*page) bool, *apiError) {
	op, v, e := condition(raw, path, "equals", "does_not_equal", "is_empty", "is_not_empty")
	if e != nil {
		return nil, e
	}
	value := func(p *page) string {
		if o := p.values[prop]; o != nil {
			return o.name
		}
		return ""
	}
	switch op {
	case "is_empty", "is_not_empty":
		var yes bool
		if json.Unmarshal(v, &yes) != nil || !yes {
			return nil, invalidValue(path+"."+op, "`true`", v)
		}
		want := op == "is_empty"
		return func(p *page) bool { return (value(p) == "") == want }, nil
	}
	var name string
	if json.Unmarshal(v, &name) != nil {
		return nil, invalidValue(path+"."+op, "a string", v)
	}
	if prop.typ == "status" && prop.option(name) == nil {
		return nil, invalidRequest("Invalid status option %q for property %q: it has no such option.", name, prop.name)
	}
	equal := op == "equals"
	return func(p *page) bool { return (value(p) == name) == equal }, nil
}

// titleFilter reads a rich text filter condition on the title.
func titleFilter(raw json.RawMessage, path string) (func(*page) bool, *apiError) {
	op, v, e := condition(raw, path, "equals", "does_not_equal", "contains", "does_not_contain", "starts_with", "ends_with", "is_empty", "is_not_empty")
	if e != nil {
		return nil, e
	}
	if op == "is_empty" || op == "is_not_empty" {
		var yes bool
		if json.Unmarshal(v, &yes) != nil || !yes {
			return nil, invalidValue(path+"."+op, "`true`", v)
		}
		want := op == "is_empty"
		return func(p *page) bool { return (p.title == "") == want }, nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return nil, invalidValue(path+"."+op, "a string", v)
	}
	tests := map[string]func(string) bool{
		"equals":           func(t string) bool { return t == s },
		"does_not_equal":   func(t string) bool { return t != s },
		"contains":         func(t string) bool { return strings.Contains(strings.ToLower(t), strings.ToLower(s)) },
		"does_not_contain": func(t string) bool { return !strings.Contains(strings.ToLower(t), strings.ToLower(s)) },
		"starts_with":      func(t string) bool { return strings.HasPrefix(strings.ToLower(t), strings.ToLower(s)) },
		"ends_with":        func(t string) bool { return strings.HasSuffix(strings.ToLower(t), strings.ToLower(s)) },
	}
	test := tests[op]
	return func(p *page) bool { return test(p.title) }, nil
}

// sorts reads a query's sorts: each by a property or by created_time or
// last_edited_time, ascending or descending, the first taking precedence.
// Pages equal by every sort keep their creation order.
func sorts(ds *dataSource, raw json.RawMessage) (func(a, b *page) int, *apiError) {
	items, e := array(raw, "body.sorts")
	if e != nil {
		return nil, e
	}
	var keys []func(a, b *page) int
	for i, item := range items {
		k, e := sortKey(ds, item, fmt.Sprintf("body.sorts[%d]", i))
		if e != nil {
			return nil, e
		}
		keys = append(keys, k)
	}
	return func(a, b *page) int {
		for _, k := range keys {
			if c := k(a, b); c != 0 {
				return c
			}
		}
		return 0
	}, nil
}

// sortKey reads one sort object (at path).
func sortKey(ds *dataSource, raw json.RawMessage, path string) (func(a, b *page) int, *apiError) {
	f, e := object(raw, path, "property", "timestamp", "direction")
	if e != nil {
		return nil, e
	}
	dir, _, e := f.str(path, "direction", true)
	if e != nil {
		return nil, e
	}
	sign := 1
	switch dir {
	case "ascending":
	case "descending":
		sign = -1
	default:
		return nil, invalidValue(path+".direction", "`ascending` or `descending`", f["direction"])
	}
	prop, hasProp, e := f.str(path, "property", false)
	if e != nil {
		return nil, e
	}
	ts, hasTS, e := f.str(path, "timestamp", false)
	if e != nil {
		return nil, e
	}
	var key func(a, b *page) int
	switch {
	case hasProp == hasTS:
		return nil, invalidValue(path, "an object with exactly one of property, timestamp", raw)
	case hasTS && ts == "created_time":
		key = func(a, b *page) int { return a.created.Compare(b.created) }
	case hasTS && ts == "last_edited_time":
		key = func(a, b *page) int { return a.edited.Compare(b.edited) }
	case hasTS:
		return nil, invalidValue(path+".timestamp", "`created_time` or `last_edited_time`", f["timestamp"])
	default:
		p := ds.property(prop)
		if p == nil {
			return nil, invalidRequest("Could not find sort property with name or id: %s", prop)
		}
		key = func(a, b *page) int { return compareValues(a, b, p) }
	}
	return func(a, b *page) int { return sign * key(a, b) }, nil
}

// compareValues orders pages a and b by property p as Notion sorts it: a
// title by its text, a status or select by the order of its options in the
// schema, unset last.
func compareValues(a, b *page, p *property) int {
	if p.typ == "title" {
		return cmp.Compare(a.title, b.title)
	}
	rank := func(pg *page) int {
		if i := slices.Index(p.options, pg.values[p]); i >= 0 {
			return i
		}
		return len(p.options)
	}
	return cmp.Compare(rank(a), rank(b))
}

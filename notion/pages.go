package notion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// pageSize is how many results a list call asks for at once: Notion's
// maximum.
const pageSize = 100

// Property is one property (column) of a data source's schema.
type Property struct {
	ID, Name, Type string
	Options        []string // option names of a status/select property
}

// DataSource is a data source (the table of pages under a database) with
// its property schema, by property name.
type DataSource struct {
	ID, Title  string
	Properties map[string]Property
}

// Page is a page of a data source, as a query returns it.
type Page struct {
	ID         string // with dashes, as Notion gives it
	URL        string
	Title      string    // plain text of the page's title property
	LastEdited time.Time // last_edited_time
	// Properties are the raw property values, by name.
	Properties map[string]json.RawMessage
}

// Status is the option name of the page's status or select property name
// ("" if unset, or if the page has no such property).
func (p Page) Status(name string) string {
	var v struct {
		Type   string  `json:"type"`
		Status *option `json:"status"`
		Select *option `json:"select"`
	}
	if json.Unmarshal(p.Properties[name], &v) != nil {
		return ""
	}
	switch {
	case v.Type == "status" && v.Status != nil:
		return v.Status.Name
	case v.Type == "select" && v.Select != nil:
		return v.Select.Name
	}
	return ""
}

// option is a status or select option, or a property's value of one.
type option struct {
	Name string `json:"name"`
}

// richText is the part of a rich text object this package reads.
type richText struct {
	PlainText string `json:"plain_text"`
}

// plain joins the plain text of rich text objects.
func plain(rt []richText) string {
	var b strings.Builder
	for _, t := range rt {
		b.WriteString(t.PlainText)
	}
	return b.String()
}

// list is the envelope of Notion's paginated answers.
type list[T any] struct {
	Results    []T     `json:"results"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// next is the cursor of the following page of l, or "" when l is the last.
func (l list[T]) next() (string, error) {
	if !l.HasMore {
		return "", nil
	}
	if l.NextCursor == nil || *l.NextCursor == "" {
		return "", errors.New("has_more without a next_cursor")
	}
	return *l.NextCursor, nil
}

// DataSource finds the first data source of database databaseID (GET
// /v1/databases/{id}, then GET /v1/data_sources/{ds id}) with its property
// schema.
func (c *Client) DataSource(ctx context.Context, databaseID string) (DataSource, error) {
	var db struct {
		DataSources []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"data_sources"`
	}
	if err := c.callJSON(ctx, http.MethodGet, "/v1/databases/"+url.PathEscape(databaseID), nil, &db); err != nil {
		return DataSource{}, fmt.Errorf("notion: database %s: %w", databaseID, err)
	}
	if len(db.DataSources) == 0 {
		return DataSource{}, fmt.Errorf("notion: database %s has no data source shared with the integration", databaseID)
	}
	id := db.DataSources[0].ID
	var ds struct {
		ID         string     `json:"id"`
		Title      []richText `json:"title"`
		Properties map[string]struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Type   string `json:"type"`
			Status *struct {
				Options []option `json:"options"`
			} `json:"status"`
			Select *struct {
				Options []option `json:"options"`
			} `json:"select"`
		} `json:"properties"`
	}
	if err := c.callJSON(ctx, http.MethodGet, "/v1/data_sources/"+url.PathEscape(id), nil, &ds); err != nil {
		return DataSource{}, fmt.Errorf("notion: data source %s of database %s: %w", id, databaseID, err)
	}
	out := DataSource{ID: ds.ID, Title: plain(ds.Title), Properties: map[string]Property{}}
	for name, p := range ds.Properties {
		prop := Property{ID: p.ID, Name: name, Type: p.Type}
		if p.Name != "" {
			prop.Name = p.Name
		}
		switch {
		case p.Type == "status" && p.Status != nil:
			for _, o := range p.Status.Options {
				prop.Options = append(prop.Options, o.Name)
			}
		case p.Type == "select" && p.Select != nil:
			for _, o := range p.Select.Options {
				prop.Options = append(prop.Options, o.Name)
			}
		}
		out.Properties[name] = prop
	}
	return out, nil
}

// pageJSON is a page object as Notion sends it.
type pageJSON struct {
	ID             string                     `json:"id"`
	URL            string                     `json:"url"`
	LastEditedTime time.Time                  `json:"last_edited_time"`
	Properties     map[string]json.RawMessage `json:"properties"`
}

// page is p as a Page: its title is the plain text of its title property.
func (p pageJSON) page() Page {
	out := Page{ID: p.ID, URL: p.URL, LastEdited: p.LastEditedTime, Properties: p.Properties}
	for _, raw := range p.Properties {
		var v struct {
			Type  string     `json:"type"`
			Title []richText `json:"title"`
		}
		if json.Unmarshal(raw, &v) == nil && v.Type == "title" {
			out.Title = plain(v.Title)
			break
		}
	}
	return out
}

// checkChoiceType refuses a property type this package cannot filter or set.
func checkChoiceType(typ string) error {
	if typ != "status" && typ != "select" {
		return fmt.Errorf("notion: property type %q: want \"status\" or \"select\"", typ)
	}
	return nil
}

// Query lists the pages of data source dsID whose property prop (of type
// typ, "status" or "select") equals value, oldest created first, following
// has_more/next_cursor (page_size 100). POST /v1/data_sources/{id}/query
// with filter {"property":prop, typ:{"equals":value}} and sorts
// [{"timestamp":"created_time","direction":"ascending"}].
func (c *Client) Query(ctx context.Context, dsID, prop, typ, value string) ([]Page, error) {
	if err := checkChoiceType(typ); err != nil {
		return nil, err
	}
	body := map[string]any{
		"filter":    map[string]any{"property": prop, typ: map[string]string{"equals": value}},
		"sorts":     []map[string]string{{"timestamp": "created_time", "direction": "ascending"}},
		"page_size": pageSize,
	}
	path := "/v1/data_sources/" + url.PathEscape(dsID) + "/query"
	var pages []Page
	for {
		var l list[pageJSON]
		if err := c.callJSON(ctx, http.MethodPost, path, body, &l); err != nil {
			return nil, fmt.Errorf("notion: query %s = %q: %w", prop, value, err)
		}
		for _, p := range l.Results {
			pages = append(pages, p.page())
		}
		cursor, err := l.next()
		if err != nil {
			return nil, fmt.Errorf("notion: query %s = %q: %w", prop, value, err)
		}
		if cursor == "" {
			return pages, nil
		}
		body["start_cursor"] = cursor
	}
}

// textBlocks are the block types Text reads: each holds its text in
// <type>.rich_text.
var textBlocks = map[string]bool{
	"paragraph": true, "heading_1": true, "heading_2": true, "heading_3": true,
	"bulleted_list_item": true, "numbered_list_item": true, "to_do": true,
	"quote": true, "callout": true, "toggle": true, "code": true,
}

// block is a block object: its type, and the object under that type's key.
type block struct {
	Type    string
	Content struct {
		RichText []richText `json:"rich_text"`
	}
}

func (b *block) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw["type"], &b.Type); err != nil {
		return fmt.Errorf("block type: %w", err)
	}
	if !textBlocks[b.Type] {
		return nil
	}
	if err := json.Unmarshal(raw[b.Type], &b.Content); err != nil {
		return fmt.Errorf("%s block: %w", b.Type, err)
	}
	return nil
}

// Text is the plain text of page pageID's top-level blocks (GET
// /v1/blocks/{id}/children, paginated): one line per paragraph, heading,
// list item, to_do, quote, callout, toggle or code block; other blocks
// skipped.
func (c *Client) Text(ctx context.Context, pageID string) (string, error) {
	base := "/v1/blocks/" + url.PathEscape(pageID) + "/children"
	q := url.Values{"page_size": {fmt.Sprint(pageSize)}}
	var lines []string
	for {
		var l list[block]
		if err := c.callJSON(ctx, http.MethodGet, base+"?"+q.Encode(), nil, &l); err != nil {
			return "", fmt.Errorf("notion: text of page %s: %w", pageID, err)
		}
		for _, b := range l.Results {
			if textBlocks[b.Type] {
				lines = append(lines, plain(b.Content.RichText))
			}
		}
		cursor, err := l.next()
		if err != nil {
			return "", fmt.Errorf("notion: text of page %s: %w", pageID, err)
		}
		if cursor == "" {
			return strings.Join(lines, "\n"), nil
		}
		q.Set("start_cursor", cursor)
	}
}

// SetStatus sets page pageID's property prop (type typ: "status" or
// "select") to option value (PATCH /v1/pages/{id}).
func (c *Client) SetStatus(ctx context.Context, pageID, prop, typ, value string) error {
	if err := checkChoiceType(typ); err != nil {
		return err
	}
	body := map[string]any{
		"properties": map[string]any{prop: map[string]any{typ: map[string]string{"name": value}}},
	}
	if err := c.callJSON(ctx, http.MethodPatch, "/v1/pages/"+url.PathEscape(pageID), body, nil); err != nil {
		return fmt.Errorf("notion: set %s of page %s to %q: %w", prop, pageID, value, err)
	}
	return nil
}

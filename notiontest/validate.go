package notiontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf16"
)

// Notion's size limits on request parameters (the request limits page).
const (
	maxTextContent = 2000 // a rich text object's text.content and text.link.url
	maxRichText    = 100  // rich text objects in an array
)

// fields are a JSON object's members.
type fields map[string]json.RawMessage

// object reads raw, found at path ("body.filter"), as a JSON object. With
// allowed keys given, any other key is refused: Notion's schemas do not
// take members they do not define (the fake's strict reading of "The
// request body does not match the schema").
func object(raw json.RawMessage, path string, allowed ...string) (fields, *apiError) {
	var f fields
	if !isObject(raw) || json.Unmarshal(raw, &f) != nil {
		return nil, invalidValue(path, "an object", raw)
	}
	if len(allowed) > 0 {
		for _, k := range slices.Sorted(maps.Keys(f)) {
			if !slices.Contains(allowed, k) {
				return nil, invalidValue(path+"."+k, "not present", f[k])
			}
		}
	}
	return f, nil
}

func isObject(raw json.RawMessage) bool {
	return bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{"))
}

// isNull reports whether raw is absent or null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// invalidValue is Notion's validation error for the value raw at path:
// "body failed validation: body.x should be y, instead was `z`.".
func invalidValue(path, should string, raw json.RawMessage) *apiError {
	where, _, _ := strings.Cut(path, ".")
	return invalidRequest("%s failed validation: %s should be %s, instead was `%s`.", where, path, should, shown(raw))
}

// undefined is Notion's validation error for a missing member.
func undefined(path string) *apiError {
	where, _, _ := strings.Cut(path, ".")
	return invalidRequest("%s failed validation: %s should be defined, instead was `undefined`.", where, path)
}

// shown is raw as an error message quotes it: compact, and cut short.
func shown(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "undefined"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	if b.Len() > 100 {
		return b.String()[:100] + "…"
	}
	return b.String()
}

// str reads member key of f (at path) as a string; ok is false when it is
// absent or null, which is an error if required.
func (f fields) str(path, key string, required bool) (v string, ok bool, e *apiError) {
	raw := f[key]
	if isNull(raw) {
		if required {
			return "", false, undefined(path + "." + key)
		}
		return "", false, nil
	}
	if json.Unmarshal(raw, &v) != nil {
		return "", false, invalidValue(path+"."+key, "a string", raw)
	}
	return v, true, nil
}

// boolean reads member key of f (at path) as a boolean, if present.
func (f fields) boolean(path, key string) (v bool, ok bool, e *apiError) {
	raw := f[key]
	if isNull(raw) {
		return false, false, nil
	}
	if json.Unmarshal(raw, &v) != nil {
		return false, false, invalidValue(path+"."+key, "a boolean", raw)
	}
	return v, true, nil
}

// array reads raw (at path) as a JSON array.
func array(raw json.RawMessage, path string) ([]json.RawMessage, *apiError) {
	var a []json.RawMessage
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) || json.Unmarshal(raw, &a) != nil {
		return nil, invalidValue(path, "an array", raw)
	}
	return a, nil
}

// pageSize reads a page_size (at path) from raw, as Notion takes it: an
// integer from 1 to 100; absent, 100.
func pageSize(raw json.RawMessage, path string) (int, *apiError) {
	if isNull(raw) {
		return 100, nil
	}
	var n float64
	if json.Unmarshal(raw, &n) != nil || n != math.Trunc(n) {
		return 0, invalidValue(path, "an integer", raw)
	}
	switch {
	case n < 1:
		return 0, invalidRequest("%s failed validation: %s should be ≥ `1`, instead was `%v`.", strings.SplitN(path, ".", 2)[0], path, n)
	case n > 100:
		return 0, invalidRequest("%s failed validation: %s should be ≤ `100`, instead was `%v`.", strings.SplitN(path, ".", 2)[0], path, n)
	}
	return int(n), nil
}

// utf16Len is the length of s as Notion measures text (JavaScript's
// string length): in UTF-16 code units.
func utf16Len(s string) int {
	return len(utf16.Encode([]rune(s)))
}

// richTextInput reads an array of rich text objects (at path) as Notion
// takes them in a request, and returns their text. It holds Notion's size
// limits: at most 100 objects, text.content and text.link.url at most 2000
// characters (UTF-16 code units).
func (s *Server) richTextInput(raw json.RawMessage, path string) (string, *apiError) {
	items, e := array(raw, path)
	if e != nil {
		return "", e
	}
	if len(items) > maxRichText {
		return "", invalidRequest("body failed validation: %s.length should be ≤ `%d`, instead was `%d`.", path, maxRichText, len(items))
	}
	var text strings.Builder
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		// plain_text and href are read-only, but a client writing back
		// rich text it read sends them.
		f, e := object(item, p, "type", "text", "mention", "equation", "annotations", "plain_text", "href")
		if e != nil {
			return "", e
		}
		typ, _, e := f.str(p, "type", false)
		if e != nil {
			return "", e
		}
		if typ == "mention" || typ == "equation" || f["mention"] != nil || f["equation"] != nil {
			return "", s.unsupported("rich text of type mention or equation")
		}
		if typ != "" && typ != "text" {
			return "", invalidValue(p+".type", "`text`, `mention` or `equation`", f["type"])
		}
		content, e := textInput(f, p)
		if e != nil {
			return "", e
		}
		if e := annotationsInput(f["annotations"], p+".annotations"); e != nil {
			return "", e
		}
		text.WriteString(content)
	}
	return text.String(), nil
}

// textInput reads the text member of a rich text object (at path p).
func textInput(f fields, p string) (string, *apiError) {
	if isNull(f["text"]) {
		return "", undefined(p + ".text")
	}
	t, e := object(f["text"], p+".text", "content", "link")
	if e != nil {
		return "", e
	}
	content, _, e := t.str(p+".text", "content", true)
	if e != nil {
		return "", e
	}
	if n := utf16Len(content); n > maxTextContent {
		return "", invalidRequest("body failed validation: %s.text.content.length should be ≤ `%d`, instead was `%d`.", p, maxTextContent, n)
	}
	if !isNull(t["link"]) {
		l, e := object(t["link"], p+".text.link", "url")
		if e != nil {
			return "", e
		}
		u, _, e := l.str(p+".text.link", "url", true)
		if e != nil {
			return "", e
		}
		if n := utf16Len(u); n > maxTextContent {
			return "", invalidRequest("body failed validation: %s.text.link.url.length should be ≤ `%d`, instead was `%d`.", p, maxTextContent, n)
		}
	}
	return content, nil
}

// annotationsInput checks a rich text object's annotations (at path p), if
// any.
func annotationsInput(raw json.RawMessage, p string) *apiError {
	if isNull(raw) {
		return nil
	}
	a, e := object(raw, p, "bold", "italic", "strikethrough", "underline", "code", "color")
	if e != nil {
		return e
	}
	for _, k := range []string{"bold", "italic", "strikethrough", "underline", "code"} {
		if _, _, e := a.boolean(p, k); e != nil {
			return e
		}
	}
	_, _, e = a.str(p, "color", false)
	return e
}

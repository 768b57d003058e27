// Package notiontest is a fake Notion API for tests, the way telegramtest
// and twiliotest stand in for their providers. It is written from Notion's
// public API reference (version 2025-09-03), not from any client: it
// answers the calls a Notion integration makes to work a task database —
// retrieve a database and its data source, query a data source, read a
// page's blocks, update a page's properties, create a comment with
// attachments, create and send a file upload — and it refuses requests the
// reference says Notion refuses, with Notion's error shape
// ({"object":"error","status":…,"code":…,"message":…}) and codes:
//
//   - 401 unauthorized: a missing or wrong "Authorization: Bearer" token;
//   - 400 missing_version: no Notion-Version header (and validation_error
//     for a version other than 2025-09-03, the only one the fake speaks);
//   - 400 invalid_request_url: a path or method Notion does not have;
//   - 400 invalid_json: a body that is not JSON;
//   - 400 validation_error: a body of the wrong shape, including fields
//     the endpoint does not take, a JSON body without Content-Type:
//     application/json, a malformed id, a filter or value whose type is not
//     the property's, a status option that does not exist, rich text
//     content over 2000 UTF-16 code units or more than 100 rich text
//     items, page_size outside 1–100, an unknown start_cursor, more than 3
//     comment attachments or one whose file upload is not "uploaded", a
//     send that is not multipart/form-data with one "file" part, over
//     20 MiB, or whose part's Content-Type is not the one declared when
//     the upload was created;
//   - 404 object_not_found: an id the fake does not know.
//
// Where the reference is silent the fake is strict rather than lenient, so
// that a client mistake fails in tests at least as it would against Notion;
// each such choice is noted where it is made. A request that is valid for
// Notion but that the fake does not implement (compound filters, page
// icons, multi-part uploads, …) fails the test with t.Errorf and answers
// 400 validation_error, so a gap in the fake is never taken for a client
// bug.
//
// Two behaviours of Notion's that tests should expect. Notion rounds
// created_time and last_edited_time down to the minute, and so does the
// fake; Advance moves its clock on to see an edit. Lists (query results,
// block children) come at most 2 to a response whatever page_size asks for
// (Notion's answer "may contain fewer than page_size" results), so that
// every test exercises has_more and next_cursor.
//
// For example:
//
//	n := notiontest.New(t, "secret_test")
//	db := n.AddDatabase("Status", "Not started", "In progress", "Done")
//	page := n.AddPage(db, "Fix the login page", "Not started", "It 500s on submit.")
//	// ... the code under test calls n.URL() with token "secret_test"
//	if got := n.Status(page); got != "Done" { … }
package notiontest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the Notion-Version the fake speaks.
const Version = "2025-09-03"

// listPage is the most results one list response carries (see the package
// documentation).
const listPage = 2

// Server is the fake Notion API.
type Server struct {
	t     testing.TB
	token string
	srv   *httptest.Server
	bot   string // the integration's bot user id, author of its edits

	mu          sync.Mutex
	offset      time.Duration // Advance's
	databases   map[string]*database
	sources     map[string]*dataSource
	pages       map[string]*page
	blocks      map[string]*block
	uploads     map[string]*upload
	discussions map[string]*page // discussion id → the page it is on
	comments    map[string][]Comment
	requests    []requestRecord
	injected    []injection
}

type database struct {
	id      string
	created time.Time
	source  *dataSource
}

type dataSource struct {
	id, title string
	db        *database
	created   time.Time
	props     []*property // the title property first
	pages     []*page     // in creation order
}

// property is a property of a data source's schema.
type property struct {
	id, name, typ string // typ: "title", "status" or "select"
	options       []*option
}

type option struct {
	id, name, color string
}

type page struct {
	id              string
	source          *dataSource
	title           string
	values          map[*property]*option // status and select values; nil: unset
	created, edited time.Time
	blocks          []*block
}

type block struct {
	id, typ, text string
	page          *page
	created       time.Time
}

type upload struct {
	id, filename, contentType string
	status                    string // "pending" or "uploaded"
	data                      []byte
	created                   time.Time
	attached                  bool // its expiry_time is then null
}

// Comment is a comment the API created on a page: its plain text, and the
// files attached to it.
type Comment struct {
	Text  string
	Files []File
}

// File is a file attached to a comment, as sent to the file upload.
type File struct {
	Name, ContentType string
	Data              []byte
}

type requestRecord struct {
	method, path string
}

// injection is an answer asked for by RateLimit or Fail.
type injection struct {
	status     int
	retryAfter int // seconds, for 429
}

// New starts a fake that takes the integration token token; it is closed
// when the test ends.
func New(t testing.TB, token string) *Server {
	s := &Server{
		t: t, token: token, bot: newID(),
		databases: map[string]*database{}, sources: map[string]*dataSource{},
		pages: map[string]*page{}, blocks: map[string]*block{},
		uploads: map[string]*upload{}, discussions: map[string]*page{},
		comments: map[string][]Comment{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the fake's base URL, in place of https://api.notion.com.
func (s *Server) URL() string { return s.srv.URL }

// AddDatabase makes a database with one data source whose properties are a
// title property "Name" and a status property statusProp with the given
// options; returns the database id.
func (s *Server) AddDatabase(statusProp string, options ...string) string {
	s.t.Helper()
	return s.addDatabase("status", statusProp, options)
}

// AddSelectDatabase is AddDatabase with a select property selectProp in
// place of the status property.
func (s *Server) AddSelectDatabase(selectProp string, options ...string) string {
	s.t.Helper()
	return s.addDatabase("select", selectProp, options)
}

// colors are the option colors Notion offers, given to options in turn.
var colors = []string{"default", "gray", "brown", "orange", "yellow", "green", "blue", "purple", "pink", "red"}

func (s *Server) addDatabase(typ, name string, options []string) string {
	s.t.Helper()
	if name == "" || name == "Name" {
		s.t.Fatalf("notiontest: AddDatabase: property name %q: want a name other than the title's", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	db := &database{id: newID(), created: now}
	ds := &dataSource{id: newID(), title: "Tasks", db: db, created: now}
	choice := &property{id: newPropertyID(), name: name, typ: typ}
	for i, o := range options {
		choice.options = append(choice.options, &option{id: newID(), name: o, color: colors[i%len(colors)]})
	}
	ds.props = []*property{{id: "title", name: "Name", typ: "title"}, choice}
	db.source = ds
	s.databases[db.id] = db
	s.sources[ds.id] = ds
	return db.id
}

// AddPage adds a page to that database with title, status option (""
// for none), and body paragraphs; returns its id (a UUID with dashes). Its
// created_time/last_edited_time are now.
func (s *Server) AddPage(dbID, title, status string, paragraphs ...string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	db := s.databases[dbID]
	if db == nil {
		s.t.Fatalf("notiontest: AddPage: no database %q", dbID)
	}
	ds := db.source
	now := s.now()
	p := &page{id: newID(), source: ds, title: title, values: map[*property]*option{}, created: now, edited: now}
	if status != "" {
		prop := ds.props[1]
		o := prop.option(status)
		if o == nil {
			s.t.Fatalf("notiontest: AddPage: %q is not an option of %q", status, prop.name)
		}
		p.values[prop] = o
	}
	for _, text := range paragraphs {
		s.addBlock(p, "paragraph", text)
	}
	ds.pages = append(ds.pages, p)
	s.pages[p.id] = p
	return p.id
}

// textBlockTypes are the block types AddBlock makes with text, and
// blankBlockTypes those without.
var (
	textBlockTypes = []string{
		"paragraph", "heading_1", "heading_2", "heading_3", "bulleted_list_item",
		"numbered_list_item", "to_do", "quote", "callout", "toggle", "code",
	}
	blankBlockTypes = []string{"divider", "table_of_contents", "breadcrumb"}
)

// AddBlock appends a block of type typ to page pageID's content and
// returns its id: a block with text (paragraph, heading_1, to_do, code, …)
// or, with text "", one without (divider, table_of_contents, breadcrumb).
func (s *Server) AddBlock(pageID, typ, text string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.page(pageID)
	switch {
	case slices.Contains(textBlockTypes, typ):
	case slices.Contains(blankBlockTypes, typ) && text == "":
	default:
		s.t.Fatalf("notiontest: AddBlock: cannot make a %q block with text %q", typ, text)
	}
	return s.addBlock(p, typ, text).id
}

func (s *Server) addBlock(p *page, typ, text string) *block {
	b := &block{id: newID(), typ: typ, text: text, page: p, created: s.now()}
	p.blocks = append(p.blocks, b)
	s.blocks[b.id] = b
	return b
}

// page is the page pageID, or fails the test.
func (s *Server) page(pageID string) *page {
	s.t.Helper()
	p := s.pages[pageID]
	if p == nil {
		s.t.Fatalf("notiontest: no page %q", pageID)
	}
	return p
}

// Status is the current option of page pageID's status (or select)
// property, "" if unset.
func (s *Server) Status(pageID string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.page(pageID)
	if o := p.values[p.source.props[1]]; o != nil {
		return o.name
	}
	return ""
}

// SetStatus sets page pageID's status (or select) property to option
// status, as a person would in Notion (it bumps last_edited_time).
func (s *Server) SetStatus(pageID, status string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.page(pageID)
	prop := p.source.props[1]
	o := prop.option(status)
	if o == nil {
		s.t.Fatalf("notiontest: SetStatus: %q is not an option of %q", status, prop.name)
	}
	p.values[prop] = o
	p.edited = s.now()
}

// Comments are the comments created on page pageID, oldest first.
func (s *Server) Comments(pageID string) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.comments[pageID])
}

// Requests counts the requests answered (with any status) whose method is
// method ("" for any) and whose path starts with pathPrefix.
func (s *Server) Requests(method, pathPrefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if (method == "" || r.method == method) && strings.HasPrefix(r.path, pathPrefix) {
			n++
		}
	}
	return n
}

// RateLimit makes the next n requests answer 429 rate_limited with
// Retry-After: secs.
func (s *Server) RateLimit(n int, secs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.injected = append(s.injected, injection{status: http.StatusTooManyRequests, retryAfter: secs})
	}
}

// Fail makes the next n requests answer status (e.g. 503
// service_unavailable), with Notion's code for it.
func (s *Server) Fail(n int, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.injected = append(s.injected, injection{status: status})
	}
}

// Advance moves the fake's clock on by d: what it creates or edits from
// then on is stamped d later. Notion rounds timestamps down to the minute,
// so a test that wants to see last_edited_time change advances a minute.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
}

// now is the fake's clock; s.mu must be held.
func (s *Server) now() time.Time { return time.Now().Add(s.offset) }

// option is the option of p named name, or nil.
func (p *property) option(name string) *option {
	for _, o := range p.options {
		if o.name == name {
			return o
		}
	}
	return nil
}

// optionByID is the option of p with id, or nil.
func (p *property) optionByID(id string) *option {
	for _, o := range p.options {
		if o.id == id {
			return o
		}
	}
	return nil
}

// newID is a random UUID (version 4) with dashes, as Notion gives ids.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// newPropertyID is a short property id, like Notion's ("%3AUPp").
func newPropertyID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "%3A" + hex.EncodeToString(b[:])
}

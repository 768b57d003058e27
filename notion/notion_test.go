package notion_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/notion"
	"github.com/textslash/textslash/notiontest"
)

const token = "secret_textslash_test"

// client is a Client of the fake s.
func client(s *notiontest.Server) *notion.Client {
	return &notion.Client{BaseURL: s.URL(), Token: token, MaxWait: 10 * time.Second}
}

// tasks is a fake with a task database; it returns the fake, a client of
// it and the database id.
func tasks(t *testing.T) (*notiontest.Server, *notion.Client, string) {
	t.Parallel()
	s := notiontest.New(t, token)
	db := s.AddDatabase("Status", "Todo", "Doing", "Done")
	return s, client(s), db
}

// apiError is err's Notion answer, or fails the test.
func apiError(t *testing.T, err error) *notion.Error {
	t.Helper()
	var e *notion.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T); want a *notion.Error", err, err)
	}
	return e
}

func TestDataSource(t *testing.T) {
	_, c, db := tasks(t)
	ds, err := c.DataSource(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if ds.ID == "" || ds.ID == db {
		t.Fatalf("data source id %q; want the data source's, not the database's", ds.ID)
	}
	if p := ds.Properties["Name"]; p.Type != "title" || p.ID != "title" {
		t.Fatalf("Name property %+v; want the title", p)
	}
	if p := ds.Properties["Status"]; p.Type != "status" || p.Name != "Status" || !slices.Equal(p.Options, []string{"Todo", "Doing", "Done"}) {
		t.Fatalf("Status property %+v; want status Todo, Doing, Done", p)
	}
}

func TestQueryFollowsCursorsOldestFirst(t *testing.T) {
	s, c, db := tasks(t)
	var want []string
	for i, st := range []string{"Todo", "Done", "Todo", "Todo", "Doing", "Todo", "Todo"} {
		id := s.AddPage(db, "Task "+string(rune('A'+i)), st)
		if st == "Todo" {
			want = append(want, id)
		}
	}
	ctx := context.Background()
	ds, err := c.DataSource(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := c.Query(ctx, ds.ID, "Status", "status", "Todo")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pages {
		got = append(got, p.ID)
		if p.Status("Status") != "Todo" || !strings.HasPrefix(p.Title, "Task ") || p.LastEdited.IsZero() || !strings.Contains(p.URL, strings.ReplaceAll(p.ID, "-", "")) {
			t.Errorf("page %+v", p)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v; want %v, oldest first", got, want)
	}
	// The fake answers 2 pages at a time: 5 pages take 3 requests.
	if n := s.Requests("POST", "/v1/data_sources/"); n != 3 {
		t.Fatalf("%d query requests; want 3", n)
	}
	if _, err := c.Query(ctx, ds.ID, "Status", "status", "Blocked"); !notion.Permanent(err) {
		t.Fatalf("query for a status option that does not exist: %v; want a permanent error", err)
	}
	if _, err := c.Query(ctx, ds.ID, "Status", "checkbox", "true"); err == nil {
		t.Fatal("query with type checkbox: no error")
	}
}

func TestSelectProperty(t *testing.T) {
	t.Parallel()
	s := notiontest.New(t, token)
	c := client(s)
	db := s.AddSelectDatabase("Stage", "Inbox", "Done")
	p := s.AddPage(db, "Task", "Inbox")
	ctx := context.Background()
	ds, err := c.DataSource(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Properties["Stage"]; got.Type != "select" || !slices.Equal(got.Options, []string{"Inbox", "Done"}) {
		t.Fatalf("Stage %+v", got)
	}
	if err := c.SetStatus(ctx, p, "Stage", "select", "Done"); err != nil {
		t.Fatal(err)
	}
	pages, err := c.Query(ctx, ds.ID, "Stage", "select", "Done")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 1 || pages[0].ID != p || pages[0].Status("Stage") != "Done" {
		t.Fatalf("pages %+v", pages)
	}
}

func TestText(t *testing.T) {
	s, c, db := tasks(t)
	long := strings.Repeat("long line 🙂 ", 300) // over 2000 characters: several rich text items
	p := s.AddPage(db, "Task", "Todo", "First paragraph.", long)
	s.AddBlock(p, "heading_2", "Steps")
	s.AddBlock(p, "divider", "")
	s.AddBlock(p, "to_do", "write the test")
	s.AddBlock(p, "code", "go test ./...")
	got, err := c.Text(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{"First paragraph.", long, "Steps", "write the test", "go test ./..."}, "\n")
	if got != want {
		t.Fatalf("text %q;\nwant %q", got, want)
	}
}

func TestSetStatus(t *testing.T) {
	s, c, db := tasks(t)
	p := s.AddPage(db, "Task", "Todo")
	ctx := context.Background()
	ds, err := c.DataSource(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.Query(ctx, ds.ID, "Status", "status", "Todo")
	if err != nil {
		t.Fatal(err)
	}
	s.Advance(time.Minute) // Notion's last_edited_time counts minutes
	if err := c.SetStatus(ctx, p, "Status", "status", "Doing"); err != nil {
		t.Fatal(err)
	}
	if got := s.Status(p); got != "Doing" {
		t.Fatalf("status %q; want Doing", got)
	}
	after, err := c.Query(ctx, ds.ID, "Status", "status", "Doing")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || !after[0].LastEdited.After(before[0].LastEdited) {
		t.Fatalf("last edited %v, then %v; want later", before[0].LastEdited, after)
	}
	err = c.SetStatus(ctx, p, "Status", "status", "Shipped")
	if e := apiError(t, err); e.Status != 400 || e.Code != "validation_error" || !notion.Permanent(err) {
		t.Fatalf("setting an option that does not exist: %v", err)
	}
}

func TestCommentWithLongTextAndUpload(t *testing.T) {
	s, c, db := tasks(t)
	p := s.AddPage(db, "Task", "Done")
	ctx := context.Background()
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 1000)...)
	id, err := c.Upload(ctx, "shot.png", "", png)
	if err != nil {
		t.Fatal(err)
	}
	// 5000 characters with emoji, which Notion counts twice: the fake
	// refuses any rich text item over 2000 UTF-16 code units.
	text := strings.Repeat("Done 🎉 ", 700)
	if err := c.Comment(ctx, p, text, id); err != nil {
		t.Fatal(err)
	}
	got := s.Comments(p)
	if len(got) != 1 || got[0].Text != text {
		t.Fatalf("comments %+v; want the text whole", got)
	}
	f := got[0].Files
	if len(f) != 1 || f[0].Name != "shot.png" || f[0].ContentType != "image/png" || !bytes.Equal(f[0].Data, png) {
		t.Fatalf("attached files %+v; want shot.png, image/png, the bytes sent", f)
	}
}

func TestCommentCutsWhatNotionCannotHold(t *testing.T) {
	s, c, db := tasks(t)
	p := s.AddPage(db, "Task", "Done")
	text := strings.Repeat("a", 100*2000+5) // more than 100 items of 2000
	if err := c.Comment(context.Background(), p, text); err != nil {
		t.Fatal(err)
	}
	got := s.Comments(p)
	want := strings.Repeat("a", 100*2000-1) + "…"
	if len(got) != 1 || got[0].Text != want {
		t.Fatalf("comment of %d bytes ending %q; want 199999 a's and …", len(got[0].Text), got[0].Text[len(got[0].Text)-5:])
	}
}

func TestRefusedBeforeSending(t *testing.T) {
	s, c, db := tasks(t)
	p := s.AddPage(db, "Task", "Done")
	ctx := context.Background()
	if _, err := c.Upload(ctx, "big.bin", "application/pdf", make([]byte, notion.MaxUploadSize+1)); err == nil {
		t.Fatal("upload of 20 MiB + 1: no error")
	}
	ids := []string{"a", "b", "c", "d"}
	if err := c.Comment(ctx, p, "four files", ids...); err == nil {
		t.Fatal("comment with 4 uploads: no error")
	}
	if err := c.Comment(ctx, p, ""); err == nil {
		t.Fatal("empty comment: no error")
	}
	if n := s.Requests("", "/"); n != 0 {
		t.Fatalf("%d requests sent; want none", n)
	}
}

func TestUploadThenAttachToAnotherComment(t *testing.T) {
	s, c, db := tasks(t)
	p := s.AddPage(db, "Task", "Done")
	ctx := context.Background()
	id, err := c.Upload(ctx, "notes.txt", "text/plain", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Requests("POST", "/v1/file_uploads"); n != 2 {
		t.Fatalf("%d upload requests; want 2 (create, send)", n)
	}
	if err := c.Comment(ctx, p, "", id); err != nil {
		t.Fatal(err)
	}
	if got := s.Comments(p); len(got) != 1 || string(got[0].Files[0].Data) != "hello" || got[0].Files[0].ContentType != "text/plain" {
		t.Fatalf("comments %+v", got)
	}
}

func TestWaitsOutRateLimit(t *testing.T) {
	s, c, db := tasks(t)
	s.RateLimit(1, 1)
	start := time.Now()
	if _, err := c.DataSource(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("answered in %v; want the 1s Retry-After waited", d)
	}
	if n := s.Requests("GET", "/v1/databases/"); n != 2 {
		t.Fatalf("%d database requests; want 2 (429, then the answer)", n)
	}
}

func TestRetries503(t *testing.T) {
	s, c, db := tasks(t)
	p := s.AddPage(db, "Task", "Todo")
	s.Fail(2, http.StatusServiceUnavailable)
	if err := c.SetStatus(context.Background(), p, "Status", "status", "Done"); err != nil {
		t.Fatal(err)
	}
	if got := s.Status(p); got != "Done" {
		t.Fatalf("status %q; want Done", got)
	}
	if n := s.Requests("PATCH", "/v1/pages/"); n != 3 {
		t.Fatalf("%d PATCH requests; want 3", n)
	}
}

func Test404IsPermanent(t *testing.T) {
	s, c, _ := tasks(t)
	err := c.SetStatus(context.Background(), "2e2cdb8b-9897-4a6c-a935-82922b1cfb87", "Status", "status", "Done")
	e := apiError(t, err)
	if e.Status != 404 || e.Code != "object_not_found" || !notion.Permanent(err) {
		t.Fatalf("error %v; want a permanent 404 object_not_found", err)
	}
	if n := s.Requests("", "/"); n != 1 {
		t.Fatalf("%d requests; a 404 is not retried", n)
	}
}

func TestBadToken(t *testing.T) {
	s, c, db := tasks(t)
	c.Token = "secret_wrong"
	_, err := c.DataSource(context.Background(), db)
	if e := apiError(t, err); e.Status != 401 || e.Code != "unauthorized" || !notion.Permanent(err) {
		t.Fatalf("error %v; want a permanent 401 unauthorized", err)
	}
	if n := s.Requests("", "/"); n != 1 {
		t.Fatalf("%d requests; a 401 is not retried", n)
	}
}

func TestGivesUpWithinMaxWait(t *testing.T) {
	s, c, db := tasks(t)
	c.MaxWait = 1500 * time.Millisecond
	s.Fail(100, http.StatusBadGateway)
	start := time.Now()
	_, err := c.DataSource(context.Background(), db)
	if e := apiError(t, err); e.Status != 502 || notion.Permanent(err) {
		t.Fatalf("error %v; want the last 502, not permanent", err)
	}
	if d := time.Since(start); d > c.MaxWait {
		t.Fatalf("gave up after %v; MaxWait is %v", d, c.MaxWait)
	}
	if n := s.Requests("", "/"); n < 2 {
		t.Fatalf("%d requests; want retries", n)
	}
	// A Retry-After beyond MaxWait is not slept through.
	s2 := notiontest.New(t, token)
	c2 := client(s2)
	c2.MaxWait = time.Second
	s2.RateLimit(1, 30)
	start = time.Now()
	_, err = c2.DataSource(context.Background(), s2.AddDatabase("Status", "Todo"))
	if e := apiError(t, err); e.Status != 429 || time.Since(start) > time.Second {
		t.Fatalf("error %v after %v; want the 429 at once", err, time.Since(start))
	}
}

func TestContextEndsRetries(t *testing.T) {
	s, c, db := tasks(t)
	s.Fail(100, http.StatusServiceUnavailable)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.DataSource(ctx, db)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v; want the context's deadline", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("returned after %v; want soon after the context ended", d)
	}
}

// flakyProxy passes requests to the fake s, except those that intercept
// answers itself (it returns true); it counts the requests it sees.
func flakyProxy(t *testing.T, s *notiontest.Server, intercept func(w http.ResponseWriter, r *http.Request, n int32) bool) (*notion.Client, *atomic.Int32) {
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r, seen.Add(1)) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return &notion.Client{BaseURL: srv.URL, Token: token, MaxWait: 10 * time.Second}, &seen
}

// drop closes the request's connection without an answer: a network
// failure.
func drop(t *testing.T, w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	conn.Close()
}

func TestRetriesNetworkErrors(t *testing.T) {
	s, _, db := tasks(t)
	c, seen := flakyProxy(t, s, func(w http.ResponseWriter, r *http.Request, n int32) bool {
		if n == 1 {
			drop(t, w)
			return true
		}
		return false
	})
	ds, err := c.DataSource(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Properties["Status"].Type != "status" {
		t.Fatalf("data source %+v", ds)
	}
	if n := seen.Load(); n != 3 {
		t.Fatalf("proxy saw %d requests; want 3 (dropped, database, data source)", n)
	}
}

func TestUploadSendRetriedWhole(t *testing.T) {
	s, _, db := tasks(t)
	p := s.AddPage(db, "Task", "Done")
	var sends atomic.Int32
	c, _ := flakyProxy(t, s, func(w http.ResponseWriter, r *http.Request, _ int32) bool {
		if !strings.HasSuffix(r.URL.Path, "/send") || sends.Add(1) > 2 {
			return false
		}
		// Read part of the body, as a server that fails midway would.
		_, _ = r.Body.Read(make([]byte, 100))
		if sends.Load() == 1 {
			drop(t, w)
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"object":"error","status":503,"code":"service_unavailable","message":"Notion is unavailable."}`))
		return true
	})
	ctx := context.Background()
	data := bytes.Repeat([]byte("%PDF-1.7 "), 4000)
	id, err := c.Upload(ctx, "report.pdf", "application/pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if n := sends.Load(); n != 3 {
		t.Fatalf("%d sends; want 3 (dropped, 503, accepted)", n)
	}
	if err := c.Comment(ctx, p, "report", id); err != nil {
		t.Fatal(err)
	}
	if got := s.Comments(p); len(got) != 1 || !bytes.Equal(got[0].Files[0].Data, data) {
		t.Fatalf("the file Notion got differs from the one sent: %+v", got)
	}
}

func TestPacesRequests(t *testing.T) {
	s, c, db := tasks(t)
	start := time.Now()
	for range 5 { // 10 requests: a burst of 3, then 3 a second
		if _, err := c.DataSource(context.Background(), db); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Fatalf("10 requests in %v; want about 3 a second after a burst of 3", d)
	}
	if n := s.Requests("", "/"); n != 10 {
		t.Fatalf("%d requests; want 10", n)
	}
}

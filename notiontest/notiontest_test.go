package notiontest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/notiontest"
)

const token = "secret_notiontest"

// answer is a decoded response.
type answer struct {
	status int
	header http.Header
	body   map[string]any
}

// code is an error answer's code ("" for a success).
func (a answer) code() string {
	c, _ := a.body["code"].(string)
	return c
}

// req is a raw request to the fake: JSON body (if any) with Notion's
// headers, which edit may change.
func req(t *testing.T, s *notiontest.Server, method, path, body string, edit ...func(*http.Request)) answer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	hr, err := http.NewRequest(method, s.URL()+path, r)
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Notion-Version", "2025-09-03")
	if body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for _, e := range edit {
		e(hr)
	}
	return send(t, hr)
}

func send(t *testing.T, hr *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	if err := json.NewDecoder(resp.Body).Decode(&a.body); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", hr.Method, hr.URL.Path, err)
	}
	return a
}

// wantError checks that a is Notion's error answer with status and code,
// and that its message contains part.
func wantError(t *testing.T, a answer, status int, code, part string) {
	t.Helper()
	if a.status != status || a.code() != code || a.body["object"] != "error" || a.body["status"] != float64(status) {
		t.Fatalf("answer %d %v; want %d %s", a.status, a.body, status, code)
	}
	if msg, _ := a.body["message"].(string); !strings.Contains(msg, part) {
		t.Fatalf("message %q; want it to contain %q", msg, part)
	}
}

func wantOK(t *testing.T, a answer) map[string]any {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("answer %d %v; want 200", a.status, a.body)
	}
	return a.body
}

// setup is a fake with a database of 5 pages, 3 of them "Todo".
func setup(t *testing.T) (s *notiontest.Server, db, ds string, pages []string) {
	s = notiontest.New(t, token)
	db = s.AddDatabase("Status", "Todo", "Doing", "Done")
	for i, st := range []string{"Todo", "Done", "Todo", "Doing", "Todo"} {
		pages = append(pages, s.AddPage(db, fmt.Sprintf("Task %d", i), st, "First paragraph.", "Second."))
	}
	a := wantOK(t, req(t, s, "GET", "/v1/databases/"+db, ""))
	ds = a["data_sources"].([]any)[0].(map[string]any)["id"].(string)
	return s, db, ds, pages
}

func TestRefusesBadTokenAndVersion(t *testing.T) {
	s, db, _, _ := setup(t)
	path := "/v1/databases/" + db
	wantError(t, req(t, s, "GET", path, "", func(r *http.Request) { r.Header.Del("Authorization") }), 401, "unauthorized", "token")
	wantError(t, req(t, s, "GET", path, "", func(r *http.Request) { r.Header.Set("Authorization", "Bearer other") }), 401, "unauthorized", "token")
	wantError(t, req(t, s, "GET", path, "", func(r *http.Request) { r.Header.Set("Authorization", token) }), 401, "unauthorized", "token")
	wantError(t, req(t, s, "GET", path, "", func(r *http.Request) { r.Header.Del("Notion-Version") }), 400, "missing_version", "Notion-Version")
	wantError(t, req(t, s, "GET", path, "", func(r *http.Request) { r.Header.Set("Notion-Version", "2022-06-28") }), 400, "validation_error", "Notion-Version")
	wantOK(t, req(t, s, "GET", path, ""))
}

func TestRefusesUnknownURLsAndIDs(t *testing.T) {
	s, db, ds, pages := setup(t)
	wantError(t, req(t, s, "GET", "/v1/nothing", ""), 400, "invalid_request_url", "")
	wantError(t, req(t, s, "DELETE", "/v1/pages/"+pages[0], ""), 400, "invalid_request_url", "")
	wantError(t, req(t, s, "GET", "/v1/databases/"+ds, ""), 404, "object_not_found", ds)
	wantError(t, req(t, s, "GET", "/v1/data_sources/"+db, ""), 404, "object_not_found", db)
	wantError(t, req(t, s, "GET", "/v1/pages/not-an-id", ""), 400, "validation_error", "path.page_id should be a valid uuid")
	wantError(t, req(t, s, "GET", "/v1/blocks/"+db+"/children", ""), 404, "object_not_found", "block")
	// Notion takes ids without dashes too.
	body := wantOK(t, req(t, s, "GET", "/v1/pages/"+strings.ReplaceAll(pages[0], "-", ""), ""))
	if body["id"] != pages[0] {
		t.Fatalf("page id %v; want %s", body["id"], pages[0])
	}
}

func TestDatabaseAndDataSource(t *testing.T) {
	s, db, ds, _ := setup(t)
	a := wantOK(t, req(t, s, "GET", "/v1/databases/"+db, ""))
	if a["object"] != "database" || a["id"] != db {
		t.Fatalf("database %v", a)
	}
	a = wantOK(t, req(t, s, "GET", "/v1/data_sources/"+ds, ""))
	props := a["properties"].(map[string]any)
	if props["Name"].(map[string]any)["type"] != "title" {
		t.Fatalf("Name property %v; want a title", props["Name"])
	}
	status := props["Status"].(map[string]any)
	var names []string
	for _, o := range status["status"].(map[string]any)["options"].([]any) {
		names = append(names, o.(map[string]any)["name"].(string))
	}
	if status["type"] != "status" || strings.Join(names, ",") != "Todo,Doing,Done" {
		t.Fatalf("Status property %v; want status with options Todo, Doing, Done", status)
	}
}

// query posts a query and returns its answer.
func query(t *testing.T, s *notiontest.Server, ds, body string) answer {
	t.Helper()
	return req(t, s, "POST", "/v1/data_sources/"+ds+"/query", body)
}

func TestQueryPaginatesFiltersAndSorts(t *testing.T) {
	s, _, ds, pages := setup(t)
	body := `{"filter":{"property":"Status","status":{"equals":"Todo"}},"sorts":[{"timestamp":"created_time","direction":"%s"}],"page_size":100%s}`
	collect := func(dir string) []string {
		var ids []string
		cursor := ""
		for range 5 {
			a := wantOK(t, query(t, s, ds, fmt.Sprintf(body, dir, cursor)))
			results := a["results"].([]any)
			if len(results) > 2 {
				t.Fatalf("%d results in one answer; the fake gives at most 2", len(results))
			}
			for _, r := range results {
				ids = append(ids, r.(map[string]any)["id"].(string))
			}
			if a["has_more"] != true {
				if a["next_cursor"] != nil {
					t.Fatalf("next_cursor %v without has_more", a["next_cursor"])
				}
				return ids
			}
			cursor = fmt.Sprintf(`,"start_cursor":%q`, a["next_cursor"])
		}
		t.Fatal("query did not end")
		return nil
	}
	if got, want := strings.Join(collect("ascending"), " "), strings.Join([]string{pages[0], pages[2], pages[4]}, " "); got != want {
		t.Fatalf("ascending: %s; want %s", got, want)
	}
	if got, want := strings.Join(collect("descending"), " "), strings.Join([]string{pages[4], pages[2], pages[0]}, " "); got != want {
		t.Fatalf("descending: %s; want %s", got, want)
	}
	a := wantOK(t, query(t, s, ds, `{"page_size":1}`))
	if n := len(a["results"].([]any)); n != 1 || a["has_more"] != true {
		t.Fatalf("page_size 1: %d results, has_more %v", n, a["has_more"])
	}
	a = wantOK(t, query(t, s, ds, `{"filter":{"property":"Name","title":{"contains":"task 3"}}}`))
	if r := a["results"].([]any); len(r) != 1 || r[0].(map[string]any)["id"] != pages[3] {
		t.Fatalf("title contains: %v", r)
	}
}

func TestQueryRefusesMalformedBodies(t *testing.T) {
	s, _, ds, _ := setup(t)
	for _, c := range []struct{ body, code, part string }{
		{`{"filter":`, "invalid_json", "JSON"},
		{`[]`, "validation_error", "body should be an object"},
		{`{"limit":10}`, "validation_error", "body.limit should be not present"},
		{`{"filter":{"property":"State","status":{"equals":"Todo"}}}`, "validation_error", "Could not find property"},
		{`{"filter":{"property":"Status","select":{"equals":"Todo"}}}`, "validation_error", "type of property"},
		{`{"filter":{"property":"Status","status":{"equals":"Blocked"}}}`, "validation_error", "Blocked"},
		{`{"filter":{"property":"Status","status":{"is":"Todo"}}}`, "validation_error", "body.filter.status.is should be not present"},
		{`{"filter":{"property":"Status","status":{"equals":1}}}`, "validation_error", "should be a string"},
		{`{"filter":{"property":"Status"}}`, "validation_error", "exactly one filter condition"},
		{`{"page_size":101}`, "validation_error", "body.page_size should be ≤ `100`"},
		{`{"page_size":0}`, "validation_error", "body.page_size should be ≥ `1`"},
		{`{"page_size":"10"}`, "validation_error", "should be an integer"},
		{`{"start_cursor":"somewhere"}`, "validation_error", "start_cursor"},
		{`{"sorts":[{"timestamp":"edited_time","direction":"ascending"}]}`, "validation_error", "timestamp"},
		{`{"sorts":[{"timestamp":"created_time"}]}`, "validation_error", "direction should be defined"},
		{`{"sorts":{"timestamp":"created_time","direction":"ascending"}}`, "validation_error", "should be an array"},
	} {
		wantError(t, query(t, s, ds, c.body), 400, c.code, c.part)
	}
	wantError(t, req(t, s, "POST", "/v1/data_sources/"+ds+"/query", `{}`, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }), 400, "validation_error", "application/json")
}

// patch updates a page and returns the answer.
func patch(t *testing.T, s *notiontest.Server, pageID, body string) answer {
	t.Helper()
	return req(t, s, "PATCH", "/v1/pages/"+pageID, body)
}

func TestUpdatePageStatus(t *testing.T) {
	s, _, _, pages := setup(t)
	p := pages[0]
	before := wantOK(t, req(t, s, "GET", "/v1/pages/"+p, ""))
	edited := before["last_edited_time"].(string)
	if !strings.HasSuffix(edited, ":00.000Z") {
		t.Fatalf("last_edited_time %s; Notion rounds it down to the minute", edited)
	}
	for _, c := range []struct{ body, part string }{
		{`{"properties":{"Status":{"select":{"name":"Done"}}}}`, "Status is expected to be status."},
		{`{"properties":{"Status":{"type":"select","status":{"name":"Done"}}}}`, "Status is expected to be status."},
		{`{"properties":{"Status":{"status":{"name":"Shipped"}}}}`, "Shipped"},
		{`{"properties":{"Status":{"status":"Done"}}}`, "should be an object"},
		{`{"properties":{"State":{"status":{"name":"Done"}}}}`, "State is not a property that exists."},
		{`{"properties":{"Status":{"status":{"name":"Done"}}},"colour":"red"}`, "body.colour should be not present"},
		{`{"properties":{"Name":{"title":[{"text":{"content":"` + strings.Repeat("x", 2001) + `"}}]}}}`, "content.length should be ≤ `2000`"},
	} {
		wantError(t, patch(t, s, p, c.body), 400, "validation_error", c.part)
	}
	if got := s.Status(p); got != "Todo" {
		t.Fatalf("status after refused updates %q; want Todo unchanged", got)
	}
	s.Advance(time.Minute)
	a := wantOK(t, patch(t, s, p, `{"properties":{"Status":{"status":{"name":"Done"}}}}`))
	if got := s.Status(p); got != "Done" {
		t.Fatalf("status %q; want Done", got)
	}
	if got := a["properties"].(map[string]any)["Status"].(map[string]any)["status"].(map[string]any)["name"]; got != "Done" {
		t.Fatalf("answer's status %v; want Done", got)
	}
	if a["last_edited_time"] == edited {
		t.Fatalf("last_edited_time still %s a minute later", edited)
	}
	if a["created_time"] != before["created_time"] {
		t.Fatalf("created_time changed: %v → %v", before["created_time"], a["created_time"])
	}
}

func TestSelectProperty(t *testing.T) {
	s := notiontest.New(t, token)
	db := s.AddSelectDatabase("Stage", "Inbox", "Done")
	p := s.AddPage(db, "Task", "Inbox")
	ds := wantOK(t, req(t, s, "GET", "/v1/databases/"+db, ""))["data_sources"].([]any)[0].(map[string]any)["id"].(string)
	wantError(t, patch(t, s, p, `{"properties":{"Stage":{"status":{"name":"Done"}}}}`), 400, "validation_error", "Stage is expected to be select.")
	// Notion creates a select option it does not have yet.
	wantOK(t, patch(t, s, p, `{"properties":{"Stage":{"select":{"name":"Review"}}}}`))
	if got := s.Status(p); got != "Review" {
		t.Fatalf("stage %q; want Review", got)
	}
	a := wantOK(t, query(t, s, ds, `{"filter":{"property":"Stage","select":{"equals":"Review"}}}`))
	if n := len(a["results"].([]any)); n != 1 {
		t.Fatalf("%d pages in Review; want 1", n)
	}
	a = wantOK(t, query(t, s, ds, `{"filter":{"property":"Stage","select":{"equals":"Nowhere"}}}`))
	if n := len(a["results"].([]any)); n != 0 {
		t.Fatalf("%d pages for an option that does not exist; want 0", n)
	}
}

func TestBlockChildren(t *testing.T) {
	s := notiontest.New(t, token)
	db := s.AddDatabase("Status", "Todo")
	long := strings.Repeat("é", 2500)
	p := s.AddPage(db, "Task", "Todo", "one", long, "three")
	s.AddBlock(p, "divider", "")
	s.AddBlock(p, "to_do", "five")
	var types, texts []string
	path := "/v1/blocks/" + p + "/children?page_size=100"
	for path != "" {
		a := wantOK(t, req(t, s, "GET", path, ""))
		for _, r := range a["results"].([]any) {
			b := r.(map[string]any)
			typ := b["type"].(string)
			types = append(types, typ)
			var text strings.Builder
			rt, _ := b[typ].(map[string]any)["rich_text"].([]any)
			for _, item := range rt {
				content := item.(map[string]any)["plain_text"].(string)
				if n := len([]rune(content)); n > 2000 {
					t.Fatalf("a rich text item of %d characters; Notion holds at most 2000", n)
				}
				text.WriteString(content)
			}
			texts = append(texts, text.String())
		}
		path = ""
		if a["has_more"] == true {
			path = fmt.Sprintf("/v1/blocks/%s/children?page_size=100&start_cursor=%s", p, a["next_cursor"])
		}
	}
	if got := strings.Join(types, ","); got != "paragraph,paragraph,paragraph,divider,to_do" {
		t.Fatalf("block types %s", got)
	}
	if texts[1] != long || texts[4] != "five" {
		t.Fatalf("texts %q", texts)
	}
	wantError(t, req(t, s, "GET", "/v1/blocks/"+p+"/children?page_size=0", ""), 400, "validation_error", "query.page_size should be ≥ `1`")
	wantError(t, req(t, s, "GET", "/v1/blocks/"+p+"/children?limit=5", ""), 400, "validation_error", "query.limit should be not present")
	wantError(t, req(t, s, "GET", "/v1/blocks/"+p+"/children?start_cursor=nowhere", ""), 400, "validation_error", "start_cursor")
}

// upload creates and sends a file upload, and returns its id.
func upload(t *testing.T, s *notiontest.Server, name, contentType string, data []byte) string {
	t.Helper()
	a := wantOK(t, req(t, s, "POST", "/v1/file_uploads", fmt.Sprintf(`{"mode":"single_part","filename":%q,"content_type":%q}`, name, contentType)))
	id := a["id"].(string)
	wantOK(t, sendFile(t, s, id, "file", name, contentType, data))
	return id
}

// sendFile sends data to file upload id as multipart part partName.
func sendFile(t *testing.T, s *notiontest.Server, id, partName, name, contentType string, data []byte) answer {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, partName, name))
	h.Set("Content-Type", contentType)
	part, err := w.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	part.Write(data)
	w.Close()
	hr, err := http.NewRequest("POST", s.URL()+"/v1/file_uploads/"+id+"/send", &body)
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Notion-Version", "2025-09-03")
	hr.Header.Set("Content-Type", w.FormDataContentType())
	return send(t, hr)
}

func TestFileUpload(t *testing.T) {
	s := notiontest.New(t, token)
	png := []byte("\x89PNG\r\n\x1a\nfake image")
	a := wantOK(t, req(t, s, "POST", "/v1/file_uploads", `{"filename":"shot.png","content_type":"image/png"}`))
	id := a["id"].(string)
	if a["status"] != "pending" || a["upload_url"] != s.URL()+"/v1/file_uploads/"+id+"/send" {
		t.Fatalf("created upload %v; want pending with its send URL", a)
	}
	// Sent as JSON, under another key, as the wrong type, or too big: refused.
	wantError(t, req(t, s, "POST", "/v1/file_uploads/"+id+"/send", `{"file":"x"}`), 400, "validation_error", "multipart/form-data")
	wantError(t, sendFile(t, s, id, "upload", "shot.png", "image/png", png), 400, "validation_error", "body.upload should be not present")
	wantError(t, sendFile(t, s, id, "file", "shot.png", "application/octet-stream", png), 400, "validation_error", "does not match")
	wantError(t, sendFile(t, s, id, "file", "shot.png", "image/png", make([]byte, 20<<20+1)), 400, "validation_error", "20 MB")
	a = wantOK(t, sendFile(t, s, id, "file", "shot.png", "image/png", png))
	if a["status"] != "uploaded" || a["content_length"] != float64(len(png)) {
		t.Fatalf("sent upload %v; want uploaded, %d bytes", a, len(png))
	}
	wantError(t, sendFile(t, s, id, "file", "shot.png", "image/png", png), 400, "validation_error", "status `uploaded`")
	if a := wantOK(t, req(t, s, "GET", "/v1/file_uploads/"+id, "")); a["status"] != "uploaded" {
		t.Fatalf("retrieved upload %v", a)
	}
	wantError(t, sendFile(t, s, "2e2cdb8b-9897-4a6c-a935-82922b1cfb87", "file", "a.png", "image/png", png), 404, "object_not_found", "file_upload")
	wantError(t, req(t, s, "POST", "/v1/file_uploads", `{"mode":"single_part","number_of_parts":2}`), 400, "validation_error", "number_of_parts")
	wantError(t, req(t, s, "POST", "/v1/file_uploads", `{"mode":"whole"}`), 400, "validation_error", "body.mode")
	wantError(t, req(t, s, "POST", "/v1/file_uploads", `{"name":"a.png"}`), 400, "validation_error", "body.name should be not present")
}

// comment posts a comment and returns the answer.
func comment(t *testing.T, s *notiontest.Server, body string) answer {
	t.Helper()
	return req(t, s, "POST", "/v1/comments", body)
}

// richText is a rich_text array of the given contents, as JSON.
func richText(contents ...string) string {
	var items []string
	for _, c := range contents {
		items = append(items, fmt.Sprintf(`{"type":"text","text":{"content":%q}}`, c))
	}
	return "[" + strings.Join(items, ",") + "]"
}

func TestCommentsRefuseWhatNotionRefuses(t *testing.T) {
	s, _, _, pages := setup(t)
	p := pages[0]
	png := []byte("png")
	ready := upload(t, s, "a.png", "image/png", png)
	pending := wantOK(t, req(t, s, "POST", "/v1/file_uploads", `{"filename":"b.png","content_type":"image/png"}`))["id"].(string)
	att := func(ids ...string) string {
		var a []string
		for _, id := range ids {
			a = append(a, fmt.Sprintf(`{"file_upload_id":%q,"type":"file_upload"}`, id))
		}
		return "[" + strings.Join(a, ",") + "]"
	}
	emoji := strings.Repeat("🙂", 1000) // 2000 UTF-16 code units: the limit
	for _, c := range []struct {
		status     int
		code, body string
		part       string
	}{
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"rich_text":` + richText(strings.Repeat("a", 2001)) + `}`, "content.length should be ≤ `2000`, instead was `2001`"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"rich_text":` + richText(emoji+"🙂") + `}`, "instead was `2002`"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"rich_text":` + richText(strings.Split(strings.Repeat("a", 101), "")...) + `}`, "rich_text.length should be ≤ `100`"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"rich_text":[{"text":{"body":"hi"}}]}`, "text.body should be not present"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"}}`, "body.rich_text should be defined"},
		{400, "validation_error", `{"rich_text":` + richText("hi") + `}`, "body.parent should be defined"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"discussion_id":"` + p + `","rich_text":` + richText("hi") + `}`, "discussion_id"},
		{404, "object_not_found", `{"parent":{"page_id":"2e2cdb8b-9897-4a6c-a935-82922b1cfb87"},"rich_text":` + richText("hi") + `}`, "page"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"rich_text":` + richText("hi") + `,"attachments":` + att(ready, ready, ready, ready) + `}`, "attachments.length should be ≤ `3`"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"rich_text":` + richText("hi") + `,"attachments":` + att(pending) + `}`, "status `pending`"},
		{404, "object_not_found", `{"parent":{"page_id":"` + p + `"},"rich_text":` + richText("hi") + `,"attachments":` + att(p) + `}`, "file_upload"},
		{400, "validation_error", `{"parent":{"page_id":"` + p + `"},"rich_text":` + richText("hi") + `,"attachments":[{"file_upload_id":"` + ready + `","type":"external"}]}`, "type should be `file_upload`"},
	} {
		wantError(t, comment(t, s, c.body), c.status, c.code, c.part)
	}
	if got := s.Comments(p); len(got) != 0 {
		t.Fatalf("refused comments recorded: %v", got)
	}
	wantOK(t, comment(t, s, `{"parent":{"page_id":"`+p+`"},"rich_text":`+richText(emoji)+`}`))
}

func TestCommentWithAttachmentAndReply(t *testing.T) {
	s, _, _, pages := setup(t)
	p := pages[1]
	png := []byte("\x89PNG fake")
	id := upload(t, s, "shot.png", "image/png", png)
	a := wantOK(t, comment(t, s, `{"parent":{"page_id":"`+p+`"},"rich_text":`+richText("Done: ", "see the screenshot")+`,"attachments":[{"file_upload_id":"`+id+`"}]}`))
	if a["object"] != "comment" || a["attachments"].([]any)[0].(map[string]any)["category"] != "image" {
		t.Fatalf("comment %v", a)
	}
	if u := wantOK(t, req(t, s, "GET", "/v1/file_uploads/"+id, "")); u["expiry_time"] != nil {
		t.Fatalf("attached upload still expires: %v", u["expiry_time"])
	}
	wantOK(t, comment(t, s, `{"discussion_id":"`+a["discussion_id"].(string)+`","rich_text":`+richText("and again")+`}`))
	got := s.Comments(p)
	if len(got) != 2 || got[0].Text != "Done: see the screenshot" || got[1].Text != "and again" {
		t.Fatalf("comments %+v", got)
	}
	f := got[0].Files
	if len(f) != 1 || f[0].Name != "shot.png" || f[0].ContentType != "image/png" || !bytes.Equal(f[0].Data, png) {
		t.Fatalf("files %+v", f)
	}
}

func TestInjectedFailuresAndRequests(t *testing.T) {
	s, db, _, _ := setup(t)
	path := "/v1/databases/" + db
	before := s.Requests("GET", "/v1/databases/")
	s.RateLimit(1, 7)
	s.Fail(2, http.StatusServiceUnavailable)
	a := req(t, s, "GET", path, "")
	wantError(t, a, 429, "rate_limited", "rate limited")
	if got := a.header.Get("Retry-After"); got != "7" {
		t.Fatalf("Retry-After %q; want 7", got)
	}
	wantError(t, req(t, s, "GET", path, ""), 503, "service_unavailable", "")
	wantError(t, req(t, s, "GET", path, ""), 503, "service_unavailable", "")
	wantOK(t, req(t, s, "GET", path, ""))
	if got := s.Requests("GET", "/v1/databases/") - before; got != 4 {
		t.Fatalf("Requests counted %d more; want 4", got)
	}
	if got := s.Requests("POST", "/v1/databases/"); got != 0 {
		t.Fatalf("Requests counted %d POSTs; want 0", got)
	}
}

// recordingTB stands in for the test to catch the fake's t.Errorf.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestUnimplementedFailsTheTest(t *testing.T) {
	rec := &recordingTB{TB: t}
	s := notiontest.New(rec, token)
	wantError(t, req(t, s, "POST", "/v1/file_uploads", `{"mode":"multi_part","number_of_parts":2,"filename":"big.mov"}`), 400, "validation_error", "notiontest does not implement")
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "not implemented by this fake") {
		t.Fatalf("test errors %q; want one saying the fake lacks multi-part uploads", rec.errs)
	}
}

package telegramtest_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/textslash/textslash/telegramtest"
)

// sendDocument takes an uploaded file (any type) or a URL Telegram can
// fetch (GIF, PDF and ZIP only, as the Bot API reference says), with a
// caption of at most 1,024 characters, and records it.
func TestSendDocument(t *testing.T) {
	api := telegramtest.NewAPI(t)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".pdf") {
			w.Header().Set("Content-Type", "application/pdf")
			w.Write([]byte("%PDF-1.4 x"))
			return
		}
		w.Header().Set("Content-Type", "text/csv")
		w.Write([]byte("a,b\n"))
	}))
	defer files.Close()
	upload := func(fields map[string]string, name string, data []byte) (int, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for k, v := range fields {
			mw.WriteField(k, v)
		}
		if data != nil {
			fw, _ := mw.CreateFormFile("document", name)
			fw.Write(data)
		}
		mw.Close()
		resp, err := http.Post(api.URL+"/bot"+telegramtest.Token+"/sendDocument", mw.FormDataContentType(), &body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep struct {
			Description string `json:"description"`
		}
		json.NewDecoder(resp.Body).Decode(&rep)
		return resp.StatusCode, rep.Description
	}
	byURL := func(fields map[string]string) (int, string) {
		v := url.Values{}
		for k, x := range fields {
			v.Set(k, x)
		}
		resp, err := http.PostForm(api.URL+"/bot"+telegramtest.Token+"/sendDocument", v)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep struct {
			Description string `json:"description"`
		}
		json.NewDecoder(resp.Body).Decode(&rep)
		return resp.StatusCode, rep.Description
	}

	if code, desc := upload(map[string]string{"chat_id": "42", "caption": "here"}, "out.csv", []byte("a,b\n1,2\n")); code != http.StatusOK {
		t.Fatalf("upload: %d %s", code, desc)
	}
	if code, desc := byURL(map[string]string{"chat_id": "42", "document": files.URL + "/r.pdf"}); code != http.StatusOK {
		t.Fatalf("PDF by URL: %d %s", code, desc)
	}
	for name, tt := range map[string]func() (int, string){
		"no document":  func() (int, string) { return byURL(map[string]string{"chat_id": "42"}) },
		"no chat":      func() (int, string) { return upload(map[string]string{}, "out.csv", []byte("x")) },
		"empty upload": func() (int, string) { return upload(map[string]string{"chat_id": "42"}, "out.csv", []byte{}) },
		"caption too long": func() (int, string) {
			return upload(map[string]string{"chat_id": "42", "caption": strings.Repeat("é", 1025)}, "out.csv", []byte("x"))
		},
		"CSV by URL": func() (int, string) {
			return byURL(map[string]string{"chat_id": "42", "document": files.URL + "/out.csv"})
		},
		"not a URL": func() (int, string) { return byURL(map[string]string{"chat_id": "42", "document": "ftp://x/y.pdf"}) },
	} {
		if code, desc := tt(); code != http.StatusBadRequest || !strings.HasPrefix(desc, "Bad Request: ") {
			t.Errorf("%s: %d %q; want 400 Bad Request", name, code, desc)
		}
	}
	calls := api.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls %+v; want the two accepted", calls)
	}
	c := calls[0]
	if c.Method != "sendDocument" || c.ChatID != "42" || c.Text != "here" || len(c.Documents) != 1 || c.Documents[0] != "upload:8 bytes" ||
		c.DocumentName != "out.csv" || string(c.DocumentData) != "a,b\n1,2\n" || len(c.Photos) != 0 {
		t.Errorf("upload recorded as %+v", c)
	}
	if c := calls[1]; len(c.Documents) != 1 || c.Documents[0] != files.URL+"/r.pdf" || c.DocumentName != "r.pdf" || string(c.DocumentData) != "%PDF-1.4 x" {
		t.Errorf("PDF by URL recorded as %+v", c)
	}
}

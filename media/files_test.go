package media_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// A file is served under /files/<id>/<name> with a valid signature only,
// as a download of its stored type that browsers do not sniff.
func TestServeFile(t *testing.T) {
	store, srv := serve(t)
	data := []byte("a,b\n1,2\n")
	f, err := bus.PutFile(t.Context(), store, "text/csv; charset=utf-8", "out.csv", data)
	if err != nil {
		t.Fatal(err)
	}
	path := contract.MediaPath(f)
	if want := "/files/" + f.ID + "/out.csv"; path != want {
		t.Fatalf("MediaPath: got %q; want %q", path, want)
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		resp, body := do(t, method, srv.URL+signer.URL(f, time.Now()), nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d (%s); want 200", method, resp.StatusCode, body)
		}
		for k, want := range map[string]string{
			"Content-Type":           "text/csv; charset=utf-8",
			"Content-Disposition":    `attachment; filename="out.csv"`,
			"X-Content-Type-Options": "nosniff",
			"Content-Length":         "8",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s: %s %q; want %q", method, k, got, want)
			}
		}
		if method == http.MethodGet && string(body) != string(data) {
			t.Errorf("GET: body %q; want %q", body, data)
		}
	}

	other, err := bus.PutFile(t.Context(), store, "application/pdf", "report.pdf", []byte("%PDF-1.4"))
	if err != nil {
		t.Fatal(err)
	}
	signedURL := signer.URL(f, time.Now())
	query := signedURL[strings.Index(signedURL, "?"):]
	expired, _ := contract.NewMediaSigner([]byte("test key 0123456789"), time.Nanosecond)
	for name, tt := range map[string]struct {
		url  string
		code int
	}{
		"no signature":             {path, http.StatusForbidden},
		"expired":                  {expired.SignPath(path, time.Now().Add(-time.Hour)), http.StatusForbidden},
		"another file's signature": {contract.MediaPath(other) + query, http.StatusForbidden},
		"another name":             {"/files/" + f.ID + "/other.csv" + query, http.StatusForbidden},
		"signed other name":        {signed("/files/" + f.ID + "/other.csv"), http.StatusOK},
		"unsafe name":              {signed("/files/" + f.ID + "/a%20b.csv"), http.StatusBadRequest},
		"bad id":                   {signed("/files/short/out.csv"), http.StatusBadRequest},
		"no such file":             {signed("/files/" + strings.Repeat("A", 22) + "/out.csv"), http.StatusNotFound},
		"image signature":          {"/images/" + f.ID + ".png" + query, http.StatusForbidden},
	} {
		resp, body := do(t, http.MethodGet, srv.URL+tt.url, nil)
		if resp.StatusCode != tt.code {
			t.Errorf("%s: status %d (%s); want %d", name, resp.StatusCode, body, tt.code)
		}
		if tt.code != http.StatusOK && strings.Contains(string(body), "a,b") {
			t.Errorf("%s: body %q carries the file", name, body)
		}
	}
}

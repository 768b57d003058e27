// Photos, documents and files: sendPhoto's and sendMediaGroup's photos and
// sendDocument's document checked as Telegram does (uploads, URLs it
// fetches, its limits), and the files getFile names and serves.

package telegramtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// serveFile serves a file getFile named, at its file_path.
func (a *API) serveFile(w http.ResponseWriter, r *http.Request, path string) {
	a.mu.Lock()
	data, found := a.files[strings.TrimPrefix(path, "photos/")]
	a.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// getFile answers with the file_path of a file the fake holds.
func (a *API) getFile(w http.ResponseWriter, form url.Values) {
	id := form.Get("file_id")
	a.mu.Lock()
	_, found := a.files[id]
	a.mu.Unlock()
	if !found {
		fail(w, http.StatusBadRequest, "Bad Request: invalid file_id")
		return
	}
	write(w, http.StatusOK, reply{OK: true, Result: map[string]any{"file_id": id, "file_unique_id": id, "file_path": "photos/" + id}})
}

// mediaGroup fills call with the photos of an album, given as sendMediaGroup's
// media parameter and the files it attaches.
func (a *API) mediaGroup(call *Call, param string, files map[string][]byte) error {
	var media []struct {
		Type, Media, Caption string
	}
	if err := json.Unmarshal([]byte(param), &media); err != nil || len(media) < 2 || len(media) > 10 {
		return errors.New("media must hold 2 to 10 items")
	}
	for _, m := range media {
		var up []byte
		if name, ok := strings.CutPrefix(m.Media, "attach://"); ok {
			up = files[name]
			if up == nil {
				return errors.New("no file attached as " + name)
			}
		}
		p, err := a.photo(m.Media, up)
		if err != nil {
			return err
		}
		call.Photos = append(call.Photos, p)
		if m.Caption != "" {
			call.Text = m.Caption
		}
	}
	return nil
}

// photo checks one photo as Telegram would: an uploaded file, or a URL it
// can fetch itself (it fetches it, as Telegram does).
func (a *API) photo(ref string, upload []byte) (string, error) {
	if upload != nil {
		if len(upload) == 0 {
			return "", fmt.Errorf("empty upload")
		}
		return fmt.Sprintf("upload:%d bytes", len(upload)), nil
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("wrong remote file identifier %q", ref)
	}
	resp, err := http.Get(ref)
	if err != nil {
		return "", fmt.Errorf("failed to get HTTP URL content: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("failed to get HTTP URL content: %s", resp.Status)
	}
	return ref, nil
}

// Telegram's limits the fake keeps: captions, uploads (50 MB), files
// Telegram fetches by URL (20 MB, and for sendDocument GIF, PDF and ZIP
// only).
const (
	captionLimit = 1024
	uploadLimit  = 50 << 20
	urlLimit     = 20 << 20
)

// urlDocuments are the types sendDocument takes by URL.
var urlDocuments = []string{"image/gif", "application/pdf", "application/zip"}

// document checks a sendDocument's document as Telegram would, and records
// it in c: an upload of any type, or a URL of a GIF, PDF or ZIP file that
// it fetches.
func (a *API) document(c *Call, ref string, upload []byte, name string) error {
	if upload != nil {
		switch {
		case len(upload) == 0:
			return errors.New("file must be non-empty")
		case len(upload) > uploadLimit:
			return errors.New("file is too big")
		}
		c.Documents, c.DocumentName, c.DocumentData = []string{fmt.Sprintf("upload:%d bytes", len(upload))}, name, upload
		return nil
	}
	if ref == "" {
		return errors.New("there is no document in the request")
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("wrong remote file identifier %q", ref)
	}
	resp, err := http.Get(ref)
	if err != nil {
		return fmt.Errorf("failed to get HTTP URL content: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed to get HTTP URL content: %s", resp.Status)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !slices.Contains(urlDocuments, ct) {
		return errors.New("wrong type of the web page content")
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, urlLimit+1))
	if err != nil || len(data) > urlLimit {
		return errors.New("failed to get HTTP URL content")
	}
	c.Documents, c.DocumentName, c.DocumentData = []string{ref}, path.Base(u.Path), data
	return nil
}

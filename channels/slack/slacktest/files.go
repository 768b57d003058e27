package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// getUploadURL starts an upload: files.getUploadURLExternal takes the
// file's name and length and answers a URL to POST the bytes to and the
// file's id.
func (s *Server) getUploadURL(r *http.Request) map[string]any {
	name := r.FormValue("filename")
	length, err := strconv.Atoi(r.FormValue("length"))
	if name == "" || err != nil || length < 1 {
		return fail("invalid_arguments")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("FUP%04d", len(s.uploads)+1)
	s.uploads[id] = &upload{name: name, length: length}
	return map[string]any{"ok": true, "upload_url": s.srv.URL + "/upload/" + id, "file_id": id}
}

// receiveUpload takes the bytes of an upload, as a multipart form's
// "file" or as the raw body.
func (s *Server) receiveUpload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var data []byte
	if f, _, err := r.FormFile("file"); err == nil {
		data, err = io.ReadAll(f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	} else if data, err = io.ReadAll(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.uploads[id]
	if !ok {
		http.Error(w, "no such upload", http.StatusNotFound)
		return
	}
	u.data = data
	_, _ = fmt.Fprintf(w, "OK - %d", len(data))
}

// completeUpload shares uploaded files in a conversation (channel_id),
// with initial_comment or blocks as their message.
func (s *Server) completeUpload(r *http.Request) map[string]any {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(r.FormValue("files")), &files); err != nil || len(files) == 0 {
		return fail("invalid_arguments")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := Sent{Method: "files.completeUploadExternal", Channel: channelOf(r.FormValue("channel_id")),
		ThreadTS: r.FormValue("thread_ts"), Text: r.FormValue("initial_comment")}
	if b := r.FormValue("blocks"); b != "" {
		if !json.Valid([]byte(b)) {
			return fail("invalid_blocks")
		}
		m.Blocks = json.RawMessage(b)
	}
	var out []map[string]any
	for _, f := range files {
		u, ok := s.uploads[f.ID]
		if !ok || u.data == nil {
			return fail("file_not_found")
		}
		if len(u.data) != u.length {
			return fail("file_upload_size_mismatch")
		}
		m.Files = append(m.Files, File{ID: f.ID, Name: u.name, Title: f.Title, Data: u.data})
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	for _, f := range files {
		delete(s.uploads, f.ID)
	}
	if m.Channel != "" { // else the files are uploaded, not shared
		m.TS = s.nextTS()
		s.sent = append(s.sent, m)
	}
	return map[string]any{"ok": true, "files": out}
}

// serveFile serves a file a person sent to whoever shows the bot token:
// others get Slack's sign-in page (HTML, status 200), as files.slack.com
// answers a request without a valid token.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.served[r.URL.Path]
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body>Sign in to Slack</body></html>")
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	_, _ = w.Write(f.data)
}

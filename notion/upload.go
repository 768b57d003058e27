package notion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"path/filepath"
	"strings"
)

// MaxUploadSize is the largest file Upload sends: Notion's limit for a
// single-part upload, 20 MiB (larger files need multi-part uploads, which
// this package does not make).
const MaxUploadSize = 20 << 20

// maxFilename is the longest file name Notion takes, in bytes.
const maxFilename = 900

// fileUpload is the part of a File Upload object this package reads.
type fileUpload struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// Upload sends a file to Notion (POST /v1/file_uploads
// {"mode":"single_part","filename","content_type"}, then POST
// /v1/file_uploads/{id}/send as multipart/form-data with part "file") and
// returns the file upload's id, status "uploaded". Single-part only: at
// most 20 MB (refuse larger before sending).
//
// An empty contentType is guessed from the name's extension, or else from
// the data.
func (c *Client) Upload(ctx context.Context, name, contentType string, data []byte) (string, error) {
	if err := checkUpload(name, data); err != nil {
		return "", fmt.Errorf("notion: upload %q: %w", name, err)
	}
	if contentType == "" {
		contentType = guessType(name, data)
	}
	var created fileUpload
	create := map[string]string{"mode": "single_part", "filename": name, "content_type": contentType}
	if err := c.callJSON(ctx, http.MethodPost, "/v1/file_uploads", create, &created); err != nil {
		return "", fmt.Errorf("notion: upload %q: %w", name, err)
	}
	if created.ID == "" {
		return "", fmt.Errorf("notion: upload %q: Notion gave no file upload id", name)
	}
	send, err := sendRequest(created.ID, name, contentType, data)
	if err != nil {
		return "", fmt.Errorf("notion: upload %q: %w", name, err)
	}
	var sent fileUpload
	if err := c.call(ctx, send, &sent); err != nil {
		return "", fmt.Errorf("notion: upload %q: %w", name, err)
	}
	if sent.Status != "uploaded" {
		return "", fmt.Errorf("notion: upload %q: file upload %s is %q after sending, want \"uploaded\"", name, created.ID, sent.Status)
	}
	return created.ID, nil
}

// checkUpload refuses what Notion would refuse of a single-part upload.
func checkUpload(name string, data []byte) error {
	switch {
	case name == "":
		return errors.New("no file name")
	case len(name) > maxFilename:
		return fmt.Errorf("file name of %d bytes, Notion takes at most %d", len(name), maxFilename)
	case len(data) == 0:
		return errors.New("empty file")
	case len(data) > MaxUploadSize:
		return fmt.Errorf("%d bytes, more than the %d a single-part upload takes", len(data), MaxUploadSize)
	}
	return nil
}

// guessType is the media type of a file named name holding data: from the
// name's extension if known, else sniffed from the data, without
// parameters (no "; charset=…").
func guessType(name string, data []byte) string {
	t := mime.TypeByExtension(filepath.Ext(name))
	if t == "" {
		t = http.DetectContentType(data)
	}
	if mt, _, err := mime.ParseMediaType(t); err == nil {
		return mt
	}
	return t
}

// quoteEscaper escapes a file name for a Content-Disposition header, as
// mime/multipart does for its own form files.
var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

// sendRequest is the send step of upload id: a multipart/form-data body,
// built once so that each retry sends it whole, with the file in part
// "file" under its name and content type.
func sendRequest(id, name, contentType string, data []byte) (request, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(name)))
	h.Set("Content-Type", contentType)
	part, err := w.CreatePart(h)
	if err != nil {
		return request{}, fmt.Errorf("build multipart body: %w", err)
	}
	if _, err := part.Write(data); err != nil {
		return request{}, fmt.Errorf("build multipart body: %w", err)
	}
	if err := w.Close(); err != nil {
		return request{}, fmt.Errorf("build multipart body: %w", err)
	}
	return request{
		method:      http.MethodPost,
		path:        "/v1/file_uploads/" + url.PathEscape(id) + "/send",
		body:        buf.Bytes(),
		contentType: w.FormDataContentType(),
	}, nil
}

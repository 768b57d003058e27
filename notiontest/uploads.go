package notiontest

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
)

// maxUpload is the most a single-part upload takes: 20 MiB.
const maxUpload = 20 << 20

// maxFilename is the longest file name Notion takes, in bytes.
const maxFilename = 900

// createUpload answers POST /v1/file_uploads (Create a file upload) in
// mode single_part, the default: a File Upload object, status "pending".
// The multi_part and external_url modes are valid but not implemented.
func (s *Server) createUpload(r *http.Request, _ []string, body []byte) (any, *apiError) {
	f, e := jsonBody(r, body, "mode", "filename", "content_type", "number_of_parts", "external_url")
	if e != nil {
		return nil, e
	}
	mode, _, e := f.str("body", "mode", false)
	if e != nil {
		return nil, e
	}
	switch mode {
	case "", "single_part":
	case "multi_part", "external_url":
		return nil, s.unsupported("file uploads in mode " + mode)
	default:
		return nil, invalidValue("body.mode", "`single_part`, `multi_part` or `external_url`", f["mode"])
	}
	for _, k := range []string{"number_of_parts", "external_url"} {
		if f[k] != nil {
			return nil, invalidValue("body."+k, "not present in mode single_part", f[k])
		}
	}
	name, _, e := f.str("body", "filename", false)
	if e != nil {
		return nil, e
	}
	if len(name) > maxFilename {
		return nil, invalidRequest("body failed validation: body.filename.length should be ≤ `%d` bytes, instead was `%d`.", maxFilename, len(name))
	}
	ct, hasType, e := f.str("body", "content_type", false)
	if e != nil {
		return nil, e
	}
	if hasType {
		if _, _, err := mime.ParseMediaType(ct); err != nil {
			return nil, invalidValue("body.content_type", "a MIME type", f["content_type"])
		}
	}
	u := &upload{id: newID(), filename: name, contentType: ct, status: "pending", created: s.now()}
	s.uploads[u.id] = u
	return s.uploadJSON(u), nil
}

// getUpload answers GET /v1/file_uploads/{id} (Retrieve a file upload).
func (s *Server) getUpload(_ *http.Request, ids []string, _ []byte) (any, *apiError) {
	id, e := pathID(ids[0], "file_upload_id")
	if e != nil {
		return nil, e
	}
	u := s.uploads[id]
	if u == nil {
		return nil, notFound("file_upload", id)
	}
	return s.uploadJSON(u), nil
}

// sendUpload answers POST /v1/file_uploads/{id}/send (Send a file upload):
// multipart/form-data with the file under the key "file", at most 20 MiB,
// to an upload still "pending"; it becomes "uploaded".
//
// The part's Content-Type must be the content_type given when the upload
// was created, if one was. The reference does not say so; but Notion reads
// the type of the part sent (a reported "The content type audio/x-wav is
// not supported" came from the part, the create step having said
// audio/wav), so a client that declares image/png and sends the part as
// application/octet-stream, as mime/multipart's CreateFormFile does, is
// asking for trouble, and the fake refuses it.
func (s *Server) sendUpload(r *http.Request, ids []string, body []byte) (any, *apiError) {
	id, e := pathID(ids[0], "file_upload_id")
	if e != nil {
		return nil, e
	}
	u := s.uploads[id]
	if u == nil {
		return nil, notFound("file_upload", id)
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, invalidRequest("body failed validation: Content-Type should be `multipart/form-data` with a boundary, instead was `%s`.", r.Header.Get("Content-Type"))
	}
	if u.status != "pending" {
		return nil, invalidRequest("File upload %s has status `%s`; only a pending file upload can be sent.", id, u.status)
	}
	file, e := filePart(body, params["boundary"])
	if e != nil {
		return nil, e
	}
	if len(file.data) > maxUpload {
		return nil, invalidRequest("The file is %d bytes; a single-part upload takes at most %d (20 MB). Use mode multi_part for larger files.", len(file.data), maxUpload)
	}
	if u.contentType != "" && file.contentType != u.contentType {
		return nil, invalidRequest("The file's content type `%s` does not match the content_type `%s` given when the file upload was created.", file.contentType, u.contentType)
	}
	if u.contentType == "" {
		u.contentType = file.contentType
	}
	if u.filename == "" {
		u.filename = file.name
	}
	u.data = file.data
	u.status = "uploaded"
	return s.uploadJSON(u), nil
}

// sentFile is the file part of a send.
type sentFile struct {
	name, contentType string
	data              []byte
}

// filePart reads a send's multipart body: exactly one part "file", and no
// other (part_number belongs to multi-part uploads only).
func filePart(body []byte, boundary string) (sentFile, *apiError) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var file *sentFile
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sentFile{}, invalidRequest("body failed validation: malformed multipart/form-data: %v.", err)
		}
		switch name := part.FormName(); {
		case name != "file":
			return sentFile{}, invalidRequest("body failed validation: body.%s should be not present in a single-part upload.", name)
		case file != nil:
			return sentFile{}, invalidRequest("body failed validation: body.file should be sent once.")
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return sentFile{}, invalidRequest("body failed validation: malformed multipart/form-data: %v.", err)
		}
		ct := part.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err == nil {
			ct = mt
		}
		file = &sentFile{name: part.FileName(), contentType: ct, data: data}
	}
	if file == nil {
		return sentFile{}, undefined("body.file")
	}
	return *file, nil
}

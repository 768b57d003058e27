package discordtest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Discord's limits on a message (resources/message#create-message).
const (
	contentLimit  = 2000
	maxFiles      = 10
	maxFileBytes  = 10 << 20 // a bot's upload limit outside boosted servers
	maxButtons    = 5
	maxActionRows = 5
)

// routes is the fake's mux: the API under /api/{version}/, the gateway
// and the CDN.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(method, route string, h handler) {
		mux.HandleFunc(method+" /api/{version}"+route, s.api(method+" "+route, h))
	}
	api("GET", "/gateway", s.getGateway)
	api("GET", "/gateway/bot", s.getGateway)
	api("GET", "/users/@me", func(*http.Request, *Request) (int, any) { return http.StatusOK, s.Bot })
	api("POST", "/users/@me/channels", s.openDM)
	api("POST", "/channels/{channel}/messages", s.createMessage)
	api("GET", "/channels/{channel}/messages", s.listMessages)
	api("PATCH", "/channels/{channel}/messages/{message}", s.editMessage)
	api("POST", "/channels/{channel}/typing", s.typing)
	api("POST", "/interactions/{id}/{token}/callback", s.interactionCallback)
	mux.HandleFunc("GET /attachments/", s.cdn)
	mux.HandleFunc("GET /gateway/", s.gw.serve)
	return mux
}

// handler answers one API request (its body already read into req):
// the status and the JSON body (nil: none).
type handler func(r *http.Request, req *Request) (int, any)

// api wraps h with what every route does: the bot's authorization (not
// for interaction callbacks, which carry their token), the route's rate
// limit, the body read and the request recorded.
func (s *Server) api(route string, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := Request{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/api/"+r.PathValue("version")), Route: route}
		status, body := s.serveAPI(w, r, route, &req, h)
		req.Status = status
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		if body == nil {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, route string, req *Request, h handler) (int, any) {
	callback := strings.HasSuffix(route, "/callback")
	if !callback && r.Header.Get("Authorization") != "Bot "+s.opts.Token {
		return http.StatusUnauthorized, apiError{Code: 0, Message: "401: Unauthorized"}
	}
	if err := readBody(r, req); err != nil {
		return http.StatusBadRequest, apiError{Code: 50109, Message: "The request body contains invalid JSON."}
	}
	if int64(len(req.Body)) > maxFileBytes {
		return http.StatusRequestEntityTooLarge, apiError{Code: 40005, Message: "Request entity too large"}
	}
	if !callback {
		if status, body := s.limit(w, route, r.PathValue("channel")); status != 0 {
			return status, body
		}
	}
	return h(r, req)
}

// readBody reads a JSON body, or a multipart one's payload_json and files.
func readBody(r *http.Request, req *Request) error {
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		b, err := io.ReadAll(io.LimitReader(r.Body, 2*maxFileBytes))
		req.Body = b
		return err
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(p, 2*maxFileBytes))
		if err != nil {
			return err
		}
		switch name := p.FormName(); {
		case name == "payload_json":
			req.Body = data
		case strings.HasPrefix(name, "files["):
			req.Files = append(req.Files, File{Name: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data})
		}
	}
}

// getGateway answers GET /gateway and /gateway/bot: where to connect.
func (s *Server) getGateway(r *http.Request, _ *Request) (int, any) {
	ws := "ws" + strings.TrimPrefix(s.URL, "http") + "/gateway"
	if strings.HasSuffix(r.URL.Path, "/bot") {
		return http.StatusOK, map[string]any{"url": ws, "shards": 1,
			"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1}}
	}
	return http.StatusOK, map[string]string{"url": ws}
}

// openDM answers POST /users/@me/channels: the DM channel with recipient_id.
func (s *Server) openDM(_ *http.Request, req *Request) (int, any) {
	var body struct {
		RecipientID string `json:"recipient_id"`
	}
	if json.Unmarshal(req.Body, &body) != nil || body.RecipientID == "" {
		return http.StatusBadRequest, formError("recipient_id", "BASE_TYPE_REQUIRED", "This field is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return http.StatusOK, s.channels[s.dmLocked(User{ID: body.RecipientID})]
}

// messageBody is what creating or editing a message sends.
type messageBody struct {
	Content         *string          `json:"content"`
	Components      *[]Component     `json:"components"`
	AllowedMentions *AllowedMentions `json:"allowed_mentions"`
	Flags           *int             `json:"flags"`
}

// createMessage answers POST /channels/{channel}/messages.
func (s *Server) createMessage(r *http.Request, req *Request) (int, any) {
	var body messageBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return http.StatusBadRequest, apiError{Code: 50109, Message: "The request body contains invalid JSON."}
	}
	content, components := deref(body.Content), deref(body.Components)
	if status, e := checkMessage(content, components, req.Files); status != 0 {
		return status, e
	}
	if content == "" && len(components) == 0 && len(req.Files) == 0 {
		return http.StatusBadRequest, apiError{Code: 50006, Message: "Cannot send an empty message"}
	}
	channel := r.PathValue("channel")
	s.mu.Lock()
	ch, ok := s.channels[channel]
	if status, e := s.sendable(channel, ok); status != 0 {
		s.mu.Unlock()
		return status, e
	}
	now := time.Now()
	m := &Message{ID: snowflake(now), ChannelID: channel, GuildID: ch.GuildID, Author: s.Bot, Content: content,
		Timestamp: now.UTC().Format(time.RFC3339Nano), Mentions: []User{}, Components: components, AllowedMentions: body.AllowedMentions,
		Flags: deref(body.Flags) & createFlags}
	for _, f := range req.Files {
		id := snowflake(now)
		p := "/attachments/" + channel + "/" + id + "/" + f.Name
		s.files[p] = f
		url := s.URL + p + "?" + cdnQuery(p)
		m.Attachments = append(m.Attachments, Attachment{ID: id, Filename: f.Name, ContentType: f.ContentType, Size: len(f.Data), URL: url, ProxyURL: url})
	}
	s.messages[channel] = append(s.messages[channel], m)
	out := *m
	kind := ch.Type
	var held chan Message
	if s.hold != nil && s.hold(out) {
		held, s.hold = s.held, nil
	}
	s.mu.Unlock()
	s.gw.message(out, kind) // no session: no bot listening
	if held != nil {
		held <- out
		<-r.Context().Done() // the bot hung up
	}
	return http.StatusOK, out
}

// sendable refuses a send to a channel that does not exist or that the
// bot may not write to (mu held).
func (s *Server) sendable(channel string, exists bool) (int, any) {
	switch {
	case !exists:
		return http.StatusNotFound, apiError{Code: 10003, Message: "Unknown Channel"}
	case s.forbidden[channel]:
		return http.StatusForbidden, apiError{Code: 50007, Message: "Cannot send messages to this user"}
	}
	return 0, nil
}

// checkMessage refuses content, components or files beyond Discord's limits.
func checkMessage(content string, components []Component, files []File) (int, any) {
	if utf8.RuneCountInString(content) > contentLimit {
		return http.StatusBadRequest, formError("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
	}
	if len(files) > maxFiles {
		return http.StatusBadRequest, formError("files", "MAX_FILES", "Maximum number of files is 10")
	}
	for _, f := range files {
		if len(f.Data) > maxFileBytes {
			return http.StatusRequestEntityTooLarge, apiError{Code: 40005, Message: "Request entity too large"}
		}
	}
	if len(components) > maxActionRows {
		return http.StatusBadRequest, formError("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
	}
	for _, row := range components {
		if row.Type != ComponentActionRow || len(row.Components) == 0 || len(row.Components) > maxButtons {
			return http.StatusBadRequest, formError("components", "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "An action row holds 1 to 5 buttons")
		}
		for _, b := range row.Components {
			link := b.Style == 5
			if b.Type != ComponentButton || b.Style < 1 || b.Style > 5 || utf8.RuneCountInString(b.Label) > 80 ||
				(!link && (b.CustomID == "" || len(b.CustomID) > 100)) || (link && b.URL == "") {
				return http.StatusBadRequest, formError("components", "BUTTON_COMPONENT_INVALID", "Invalid button")
			}
		}
	}
	return 0, nil
}

// listMessages answers GET /channels/{channel}/messages: newest first,
// after / before a message id, at most limit (default 50, at most 100).
func (s *Server) listMessages(r *http.Request, _ *Request) (int, any) {
	q := r.URL.Query()
	limit := 50
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l >= 1 && l <= 100 {
		limit = l
	}
	after, before := idNumber(q.Get("after")), idNumber(q.Get("before"))
	channel := r.PathValue("channel")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[channel]; !ok {
		return http.StatusNotFound, apiError{Code: 10003, Message: "Unknown Channel"}
	}
	out := []Message{}
	msgs := s.messages[channel]
	for i := len(msgs) - 1; i >= 0 && len(out) < limit; i-- {
		id := idNumber(msgs[i].ID)
		if id > after && (before == 0 || id < before) {
			out = append(out, *msgs[i])
		}
	}
	return http.StatusOK, out
}

// editMessage answers PATCH /channels/{channel}/messages/{message}.
func (s *Server) editMessage(r *http.Request, req *Request) (int, any) {
	var body messageBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return http.StatusBadRequest, apiError{Code: 50109, Message: "The request body contains invalid JSON."}
	}
	if status, e := checkMessage(deref(body.Content), deref(body.Components), req.Files); status != 0 {
		return status, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findLocked(r.PathValue("channel"), r.PathValue("message"))
	if m == nil || m.Author.ID != s.Bot.ID {
		return http.StatusNotFound, apiError{Code: 10008, Message: "Unknown Message"}
	}
	if body.Content != nil {
		m.Content = *body.Content
	}
	if body.Components != nil {
		m.Components = *body.Components
	}
	if body.Flags != nil {
		m.Flags = m.Flags&^editFlags | *body.Flags&editFlags
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	m.EditedTimestamp = &at
	return http.StatusOK, *m
}

// typing answers POST /channels/{channel}/typing.
func (s *Server) typing(r *http.Request, _ *Request) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status, e := s.sendable(r.PathValue("channel"), s.channels[r.PathValue("channel")] != nil); status != 0 {
		return status, e
	}
	return http.StatusNoContent, nil
}

// interactionCallback answers POST /interactions/{id}/{token}/callback:
// once per interaction; type 7 (UPDATE_MESSAGE) edits the message the
// pressed button is on.
func (s *Server) interactionCallback(r *http.Request, req *Request) (int, any) {
	var body struct {
		Type int          `json:"type"`
		Data *messageBody `json:"data"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return http.StatusBadRequest, apiError{Code: 50109, Message: "The request body contains invalid JSON."}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.interactions[r.PathValue("id")]
	if st == nil || st.interaction.Token != r.PathValue("token") {
		return http.StatusNotFound, apiError{Code: 10062, Message: "Unknown interaction"}
	}
	if len(st.responses) > 0 {
		return http.StatusBadRequest, apiError{Code: 40060, Message: "Interaction has already been acknowledged."}
	}
	if body.Type < 4 || body.Type > 7 {
		return http.StatusBadRequest, formError("type", "BASE_TYPE_CHOICES", "Value must be one of {4, 5, 6, 7}.")
	}
	if body.Type == 7 && body.Data != nil {
		if status, e := checkMessage(deref(body.Data.Content), deref(body.Data.Components), nil); status != 0 {
			return status, e
		}
		if m := s.findLocked(st.interaction.ChannelID, st.interaction.Message.ID); m != nil {
			if body.Data.Content != nil {
				m.Content = *body.Data.Content
			}
			if body.Data.Components != nil {
				m.Components = *body.Data.Components
			}
		}
	}
	st.responses = append(st.responses, Callback{InteractionID: st.interaction.ID, Type: body.Type, Body: bytes.Clone(req.Body)})
	return http.StatusNoContent, nil
}

// findLocked is a channel's message by id; nil when there is none (mu held).
func (s *Server) findLocked(channel, id string) *Message {
	for _, m := range s.messages[channel] {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// formError is Discord's 50035 "Invalid Form Body" for one field.
func formError(field, code, message string) apiError {
	errs, _ := json.Marshal(map[string]any{field: map[string]any{"_errors": []map[string]string{{"code": code, "message": message}}}})
	return apiError{Code: 50035, Message: "Invalid Form Body", Errors: errs}
}

func idNumber(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

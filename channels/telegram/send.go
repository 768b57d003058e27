package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// statusMessage is the message showing a run's progress.
type statusMessage struct {
	job  string
	id   int
	text string
}

// Send implements channel.Sender with one Bot API call: a text, a photo with its
// caption, a media group (caption on the first), a document (a file, with
// its caption), or the edit of the run's status message. A message's choices are buttons under it (an inline
// keyboard), except under a media group, which cannot carry them: a
// second call sends them after it, in a message asking for the choice.
func (s *Telegram) Send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
	chat := u.ID
	var sent *models.Message
	var err error
	switch {
	case m.Progress:
		return s.progress(ctx, chat, m)
	case len(m.Media) == 0:
		sent, err = s.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: m.Body, LinkPreviewOptions: noLinkPreview, ReplyMarkup: keyboard(m.Choices, m.Links)})
	case m.Document:
		var doc models.InputFile
		if doc, err = s.document(ctx, m.Media[0]); err == nil {
			sent, err = s.bot.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chat, Document: doc, Caption: m.Body, ReplyMarkup: keyboard(m.Choices, m.Links)})
		}
	case len(m.Media) == 1:
		var photo models.InputFile
		if photo, err = s.photo(ctx, m.Media[0]); err == nil {
			sent, err = s.bot.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chat, Photo: photo, Caption: m.Body, ReplyMarkup: keyboard(m.Choices, m.Links)})
		}
	default:
		var group []models.InputMedia
		for i, link := range m.Media {
			p := &models.InputMediaPhoto{Media: link}
			if i == 0 {
				p.Caption = m.Body
			}
			if s.upload {
				data, ferr := s.fetch(ctx, link)
				if ferr != nil {
					return "", ferr
				}
				p.Media, p.MediaAttachment = "attach://photo"+strconv.Itoa(i), bytes.NewReader(data)
			}
			group = append(group, p)
		}
		var msgs []*models.Message
		if msgs, err = s.bot.SendMediaGroup(ctx, &bot.SendMediaGroupParams{ChatID: chat, Media: group}); err == nil && len(msgs) > 0 {
			sent = msgs[0]
			s.buttons(ctx, u, m.Choices, m.Links)
		}
	}
	if err != nil {
		return "", sendError(err, s.cfg.BotToken)
	}
	if sent == nil {
		return "", &channel.SendError{Err: errors.New("telegram: no message in the answer")}
	}
	return strconv.Itoa(sent.ID), nil
}

// Typing implements channel.Typer: one sendChatAction "typing" to u's chat, which
// shows it for 5 s or until the bot's next message there. A failure is
// returned, not tried again: the next Rules.TypingEvery calls again. After
// a 429 the chat gets no "typing" until its retry_after has passed, which
// leaves the chat's rate to the messages.
func (s *Telegram) Typing(ctx context.Context, u contract.User, _ string) error {
	s.mu.Lock()
	quiet := time.Now().Before(s.quiet[u.ID])
	if !quiet {
		delete(s.quiet, u.ID)
	}
	s.mu.Unlock()
	if quiet {
		return nil
	}
	_, err := s.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: u.ID, Action: models.ChatActionTyping})
	if err == nil {
		return nil
	}
	err = sendError(err, s.cfg.BotToken)
	var se *channel.SendError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		s.mu.Lock()
		s.quiet[u.ID] = time.Now().Add(se.RetryAfter)
		s.mu.Unlock()
	}
	return err
}

// buttons sends the choices after a media group, which cannot carry them.
// The group is sent: a failure here is only logged, since sending the
// message again would repeat the group, and its text says what to reply.
func (s *Telegram) buttons(ctx context.Context, u contract.User, choices []string, links []contract.Link) {
	markup := keyboard(choices, links)
	if markup == nil {
		return
	}
	text := "Open it:"
	if len(choices) > 0 {
		text = ask(choices)
	}
	_, err := s.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: u.ID, Text: text, LinkPreviewOptions: noLinkPreview, ReplyMarkup: markup})
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(sendError(err, s.cfg.BotToken)).Str("user", u.Key()).Msg("buttons after a media group not sent")
	}
}

// noLinkPreview turns off the preview Telegram shows of a text's first
// link, which its servers fetch: a preview link would open the person's
// dev server to Telegram's crawler. Every text goes without one, as on
// Slack: the preview links the message carries (Message.Links) are not
// the only ones its text can hold (a page of a long reply, a progress
// line, the status of a person's previews).
var noLinkPreview = &models.LinkPreviewOptions{IsDisabled: bot.True()}

// keyboard is one row of buttons, one per choice, whose press sends the
// choice ("yes" shows as "Yes"), then a row per https link with a button
// that opens it. An http link (the local set-up's, on the machine's own
// name) gets none: Telegram takes no button to a name it cannot reach,
// and the text has the link. Nil without either.
func keyboard(choices []string, links []contract.Link) models.ReplyMarkup {
	var rows [][]models.InlineKeyboardButton
	if len(choices) > 0 {
		row := make([]models.InlineKeyboardButton, len(choices))
		for i, c := range choices {
			row[i] = models.InlineKeyboardButton{Text: label(c), CallbackData: c}
		}
		rows = append(rows, row)
	}
	for _, l := range links {
		if strings.HasPrefix(l.URL, "https://") && l.Label != "" {
			rows = append(rows, []models.InlineKeyboardButton{{Text: l.Label, URL: l.URL}})
		}
	}
	if rows == nil {
		return nil
	}
	return &models.InlineKeyboardMarkup{InlineKeyboard: rows}
}

// ask asks for one of the choices in words: "Approve or reject?".
func ask(choices []string) string {
	last := len(choices) - 1
	words := choices[last]
	if last > 0 {
		words = strings.Join(choices[:last], ", ") + " or " + words
	}
	return label(words) + "?"
}

// label is a choice as a button shows it: "yes" is "Yes".
func label(choice string) string {
	if choice == "" {
		return ""
	}
	return strings.ToUpper(choice[:1]) + choice[1:]
}

// progress shows a progress line in the run's status message: sent for the
// run's first line, edited for the next ones.
func (s *Telegram) progress(ctx context.Context, chat string, m channel.Message) (string, error) {
	s.mu.Lock()
	st, ok := s.status[chat]
	s.mu.Unlock()
	if ok && st.job == m.JobID {
		if st.text == m.Body {
			return strconv.Itoa(st.id), nil
		}
		_, err := s.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: st.id, Text: m.Body, LinkPreviewOptions: noLinkPreview})
		if err == nil || strings.Contains(err.Error(), "message is not modified") {
			s.remember(chat, statusMessage{job: m.JobID, id: st.id, text: m.Body})
			return strconv.Itoa(st.id), nil
		}
		if !errors.Is(err, bot.ErrorBadRequest) {
			return "", sendError(err, s.cfg.BotToken)
		}
		// The status message is gone (deleted by the person): a new one.
	}
	sent, err := s.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: m.Body, LinkPreviewOptions: noLinkPreview})
	if err != nil {
		return "", sendError(err, s.cfg.BotToken)
	}
	s.remember(chat, statusMessage{job: m.JobID, id: sent.ID, text: m.Body})
	return strconv.Itoa(sent.ID), nil
}

func (s *Telegram) remember(chat string, st statusMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[chat] = st
}

// photo is an image for sendPhoto: its link, or its bytes to upload.
func (s *Telegram) photo(ctx context.Context, link string) (models.InputFile, error) {
	if !s.upload {
		return &models.InputFileString{Data: link}, nil
	}
	data, err := s.fetch(ctx, link)
	if err != nil {
		return nil, err
	}
	return &models.InputFileUpload{Filename: "image.jpeg", Data: bytes.NewReader(data)}, nil
}

// document is a file for sendDocument, always uploaded under its name (the
// link's last path element): Telegram takes documents by URL only when
// they are GIF, PDF or ZIP files.
func (s *Telegram) document(ctx context.Context, link string) (models.InputFile, error) {
	data, err := s.fetchMax(ctx, link, documentBytes)
	if err != nil {
		return nil, err
	}
	name := "file"
	if u, err := url.Parse(link); err == nil {
		name = path.Base(u.Path)
	}
	return &models.InputFileUpload{Filename: name, Data: bytes.NewReader(data)}, nil
}

// fetch reads an image from the media service, for an upload.
func (s *Telegram) fetch(ctx context.Context, link string) ([]byte, error) {
	return s.fetchMax(ctx, link, photoBytes)
}

// fetchMax reads at most max bytes of a link of the media service.
func (s *Telegram) fetchMax(ctx context.Context, link string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, &channel.SendError{Err: err, Permanent: true}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, &channel.SendError{Err: fmt.Errorf("image for upload: %w", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Gone (expired) or refused: another try cannot help.
		return nil, &channel.SendError{Err: fmt.Errorf("image for upload: %s", resp.Status), Permanent: resp.StatusCode < 500, Status: resp.StatusCode}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, &channel.SendError{Err: fmt.Errorf("image for upload: %w", err)}
	}
	if int64(len(data)) > max {
		return nil, &channel.SendError{Err: fmt.Errorf("file for upload: larger than %d bytes", max), Permanent: true}
	}
	return data, nil
}

// sendError classifies a failed Bot API call: 429 waits retry_after,
// requests Telegram refused (400, 401, 403, 404) are not tried again,
// anything else (5xx, the network) is. The token never shows.
func sendError(err error, token string) error {
	var se *channel.SendError
	if errors.As(err, &se) {
		return se
	}
	clean := errors.New(strings.ReplaceAll(err.Error(), token, "<token>"))
	var tooMany *bot.TooManyRequestsError
	switch {
	case errors.As(err, &tooMany):
		return &channel.SendError{Err: clean, Code: http.StatusTooManyRequests, Status: http.StatusTooManyRequests,
			RetryAfter: time.Duration(tooMany.RetryAfter) * time.Second}
	case errors.Is(err, bot.ErrorBadRequest):
		return &channel.SendError{Err: clean, Permanent: true, Code: http.StatusBadRequest, Status: http.StatusBadRequest}
	case errors.Is(err, bot.ErrorForbidden): // the person blocked the bot
		return &channel.SendError{Err: clean, Permanent: true, Code: http.StatusForbidden, Status: http.StatusForbidden}
	case errors.Is(err, bot.ErrorUnauthorized):
		return &channel.SendError{Err: clean, Permanent: true, Code: http.StatusUnauthorized, Status: http.StatusUnauthorized}
	case errors.Is(err, bot.ErrorNotFound):
		return &channel.SendError{Err: clean, Permanent: true, Code: http.StatusNotFound, Status: http.StatusNotFound}
	}
	return &channel.SendError{Err: clean}
}

package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"
	api "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/textslash/textslash/channel"
)

// maxEventBytes caps an Events API request's body.
const maxEventBytes = 1 << 20

// Routes serve the Events API at POST EventsPath: events (JSON) and
// interactions (form posts with a payload) alike, each checked against the
// signing secret first. It answers 200 once the message is stored, 503
// when it could not be (Slack tries again), 401 to a request not signed by
// Slack. They publish with h, the Host Run is given. Nil in Socket Mode,
// which needs no listener.
func (s *Slack) Routes(h channel.Host) map[string]http.Handler {
	if s.cfg.SocketMode() {
		return nil
	}
	s.host.CompareAndSwap(nil, &h)
	return map[string]http.Handler{"POST " + EventsPath: http.HandlerFunc(s.events)}
}

// events takes one Events API request.
func (s *Slack) events(w http.ResponseWriter, r *http.Request) {
	log := s.log.With().Str("remote", r.RemoteAddr).Str("retry_num", r.Header.Get("X-Slack-Retry-Num")).Logger()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBytes))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err := verify(r.Header, body, s.cfg.SigningSecret); err != nil {
		log.Warn().Err(err).Msg("slack events request refused")
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		s.interaction(w, r.Context(), log, body)
		return
	}
	ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	if err != nil {
		log.Warn().Err(err).Msg("slack event unreadable; refused")
		http.Error(w, "malformed event", http.StatusBadRequest)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		var ch slackevents.ChallengeResponse
		if err := json.Unmarshal(body, &ch); err != nil {
			http.Error(w, "malformed challenge", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, ch.Challenge)
	case slackevents.CallbackEvent:
		if in, conversation, ok := s.fromEvent(ev.InnerEvent); ok {
			if _, err := s.take(r.Context(), log, in, conversation); err != nil {
				http.Error(w, "could not take the message", http.StatusServiceUnavailable)
				return
			}
		}
	}
}

// interaction takes a button press of the Events API mode: a form whose
// payload field is the block_actions JSON.
func (s *Slack) interaction(w http.ResponseWriter, ctx context.Context, log zerolog.Logger, body []byte) {
	form, err := url.ParseQuery(string(body))
	var cb api.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil {
		http.Error(w, "malformed interaction", http.StatusBadRequest)
		return
	}
	in, conversation, ok := s.fromPress(cb)
	if !ok {
		return
	}
	stored, err := s.take(ctx, log, in, conversation)
	if err != nil {
		http.Error(w, "could not take the press", http.StatusServiceUnavailable)
		return
	}
	if stored {
		s.settlePress(ctx, log, cb)
	}
}

// verify checks a request's X-Slack-Signature (v0) and that its
// X-Slack-Request-Timestamp is within five minutes: ErrBadSignature if not.
func verify(h http.Header, body []byte, secret string) error {
	sv, err := api.NewSecretsVerifier(h, secret)
	if err != nil {
		return errors.Join(ErrBadSignature, err)
	}
	if _, err := sv.Write(body); err != nil {
		return errors.Join(ErrBadSignature, err)
	}
	if err := sv.Ensure(); err != nil {
		return errors.Join(ErrBadSignature, err)
	}
	return nil
}

// settlePress shows the choice under the message whose button was pressed,
// its buttons gone, so that it is not pressed twice. The press is stored:
// a failure is only logged.
func (s *Slack) settlePress(ctx context.Context, log zerolog.Logger, cb api.InteractionCallback) {
	channel, ts := cb.Container.ChannelID, cb.Container.MessageTs
	if channel == "" || ts == "" || len(cb.ActionCallback.BlockActions) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	text := shown(cb.Message) + "\n\n→ " + label(cb.ActionCallback.BlockActions[0].Value)
	if _, _, _, err := s.client.UpdateMessageContext(ctx, channel, ts, api.MsgOptionText(text, false), api.MsgOptionBlocks()); err != nil {
		log.Warn().Err(err).Str("conversation", channel).Str("ts", ts).Msg("slack message answered by a button not edited")
	}
}

// shown is the text a message of the bot's shows: its text, or, for a
// share of files with buttons (no initial comment), its sections'.
func shown(m api.Message) string {
	if m.Text != "" {
		return m.Text
	}
	var b strings.Builder
	for _, block := range m.Blocks.BlockSet {
		if sec, ok := block.(*api.SectionBlock); ok && sec.Text != nil {
			b.WriteString(sec.Text.Text)
		}
	}
	return b.String()
}

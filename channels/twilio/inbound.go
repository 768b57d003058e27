package twilio

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// maxMedia is the most attachments Twilio puts in one message.
const maxMedia = 10

// maxFormBytes caps a webhook's form.
const maxFormBytes = 64 << 10

// sidRE: Twilio's message SIDs (SM…, MM…): letters and digits.
var sidRE = regexp.MustCompile(`^[A-Za-z0-9]{2,64}$`)

// emptyTwiML answers a webhook without sending anything: replies go out
// through egress, never in the webhook's answer.
const emptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response/>`

// form reads and authenticates a Twilio webhook: the form, once its
// X-Twilio-Signature proved it came from Twilio. On failure it has
// answered the request and returns nil.
func (t *Twilio) form(w http.ResponseWriter, r *http.Request) url.Values {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
			return nil
		}
		http.Error(w, "could not read the request", http.StatusBadRequest)
		return nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "malformed form", http.StatusBadRequest)
		return nil
	}
	signed := t.cfg.PublicURL + r.URL.RequestURI()
	if !t.validator.ValidateBody(signed, body, r.Header.Get("X-Twilio-Signature")) {
		t.log.Warn().Str("remote", r.RemoteAddr).Str("url", signed).Msg("twilio signature invalid; refused (is PUBLIC_URL the URL Twilio calls?)")
		http.Error(w, "invalid signature", http.StatusForbidden)
		return nil
	}
	return form
}

// webhook takes one inbound WhatsApp or SMS message, publishing it with h.
func (t *Twilio) webhook(w http.ResponseWriter, r *http.Request, h channel.Host) {
	form := t.form(w, r)
	if form == nil {
		return
	}
	sid := form.Get("MessageSid")
	if !sidRE.MatchString(sid) {
		http.Error(w, "missing or malformed MessageSid", http.StatusBadRequest)
		return
	}
	from := form.Get("From")
	trace := contract.NewTrace(r.Header.Get("traceparent"))
	ctx := contract.WithTrace(r.Context(), trace)
	log := t.log.With().Str(contract.LogTrace, trace).Str("sid", sid).Logger()
	u, err := contract.TwilioUser(from)
	if err != nil {
		// Signed by Twilio but from a sender we cannot answer (another
		// channel's address): tell Twilio it was handled.
		log.Warn().Str("from", from).Msg("twilio message from an unsupported sender; ignored")
		twiml(w)
		return
	}
	log = log.With().Str("user", u.Key()).Logger()
	in := contract.Inbound{ID: sid, User: u, Text: text(form)}
	n, _ := strconv.Atoi(form.Get("NumMedia"))
	for k := range min(max(n, 0), maxMedia) {
		m := contract.Media{URL: form.Get("MediaUrl" + strconv.Itoa(k)), ContentType: form.Get("MediaContentType" + strconv.Itoa(k))}
		if m.URL == "" || strings.HasPrefix(m.URL, contract.StoredMedia) {
			continue
		}
		// WhatsApp's voice notes (audio/ogg) and MMS audio are spoken
		// messages: transcribed, then run.
		m.Voice = strings.HasPrefix(m.ContentType, "audio/")
		in.Media = append(in.Media, m)
	}
	t.openWindow(ctx, log, u, sid)
	switch err := h.Publish(ctx, in); {
	case errors.Is(err, channel.ErrNotAllowed):
		log.Info().Msg("sender not in ALLOWED_PHONE_NUMBERS nor paired in; ignored")
	case err != nil:
		log.Error().Err(err).Msg("twilio message not stored; Twilio may retry")
		http.Error(w, "could not take the message", http.StatusServiceUnavailable)
		return
	}
	twiml(w)
}

// openWindow tells egress that u wrote, when it holds messages for them
// that WhatsApp refused outside its 24-hour window (contract.HeldKey): a
// window event, deduplicated by the message's sid, published before the
// message so that they go out before its reply. A failure is logged: they
// wait for the person's next message.
func (t *Twilio) openWindow(ctx context.Context, log zerolog.Logger, u contract.User, sid string) {
	if u.Channel != contract.ChannelWhatsApp || t.js == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	held, err := t.heldFor(ctx, u)
	if err != nil {
		log.Warn().Err(err).Msg("held messages not looked up; they wait for the next message")
		return
	}
	if !held {
		return
	}
	ev := contract.NewWindow(u, sid)
	if err := bus.PublishEvent(ctx, t.js, ev, contract.MsgID(u, sid, string(contract.KindWindow))); err != nil {
		log.Error().Err(err).Msg("window event not published; held messages wait for the next message")
		return
	}
	log.Info().Msg("the person wrote while messages were held for them: window event published")
}

// heldFor reports whether egress holds messages for u: contract.HeldKey
// in the egress bucket, the one read of that bucket ingress may do
// (nats.conf).
func (t *Twilio) heldFor(ctx context.Context, u contract.User) (bool, error) {
	return bus.HasKey(ctx, t.js.Conn(), contract.BucketEgress, contract.HeldKey(u))
}

// text is what the person said: the payload of the quick-reply
// button they pressed when it is one of textslash's choices (egress shows
// them as WhatsApp quick-reply buttons, whose titles may read otherwise),
// else the button's title, else the message's body.
func text(form url.Values) string {
	if p := form.Get("ButtonPayload"); contract.IsChoice(p) {
		return p
	}
	if t := form.Get("ButtonText"); t != "" {
		return t
	}
	return form.Get("Body")
}

// status takes a status callback about a message sent to a person
// and publishes it as a delivery event: egress waits for it to keep a
// user's messages in order, and it tells why a message did not arrive.
func (t *Twilio) status(w http.ResponseWriter, r *http.Request) {
	if t.js == nil {
		http.Error(w, "status callbacks are not taken here", http.StatusServiceUnavailable)
		return
	}
	form := t.form(w, r)
	if form == nil {
		return
	}
	sid, status := form.Get("MessageSid"), form.Get("MessageStatus")
	if !sidRE.MatchString(sid) || status == "" {
		http.Error(w, "missing MessageSid or MessageStatus", http.StatusBadRequest)
		return
	}
	u, err := contract.TwilioUser(form.Get("To"))
	if err != nil {
		t.log.Warn().Str("sid", sid).Str("to", form.Get("To")).Msg("twilio status for an unsupported recipient; ignored")
		twiml(w)
		return
	}
	code, _ := strconv.Atoi(form.Get("ErrorCode"))
	ev := contract.NewDelivery(u, sid, status, code)
	if err := bus.PublishEvent(r.Context(), t.js, ev, contract.MsgID(u, sid, status)); err != nil {
		t.log.Error().Err(err).Str("sid", sid).Msg("twilio status not stored")
		http.Error(w, "could not take the status", http.StatusServiceUnavailable)
		return
	}
	l := t.log.Debug()
	if code != 0 {
		l = t.log.Warn()
	}
	l.Str("user", u.Key()).Str("sid", sid).Str("status", status).Int("code", code).Msg("twilio delivery status")
	twiml(w)
}

func twiml(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, emptyTwiML)
}

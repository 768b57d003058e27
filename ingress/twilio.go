package ingress

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twilio/twilio-go/client"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// Twilio configures the Twilio webhooks (WhatsApp and SMS).
type Twilio struct {
	// AuthToken signs Twilio's requests.
	AuthToken string
	// PublicURL is where Twilio reaches textslash, scheme and host (and any
	// path prefix) of the URL Twilio signs; the server behind a proxy sees
	// another URL, so signatures are checked against this one.
	PublicURL string
	// Allowed are the E.164 numbers that may talk to the agent.
	Allowed []string
	// AccountSID fetches the images people send; without it ingress does
	// not serve the media fetch service.
	AccountSID string
	// APIURL replaces https://api.twilio.com, where media is fetched from.
	APIURL string
}

// twilioMaxMedia is the most attachments Twilio puts in one message.
const twilioMaxMedia = 10

// sidRE: Twilio's message SIDs (SM…, MM…): letters and digits.
var sidRE = regexp.MustCompile(`^[A-Za-z0-9]{2,64}$`)

// emptyTwiML answers a webhook without sending anything: replies go out
// through egress, never in the webhook's answer.
const emptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response/>`

// withDefaults is t with the API's URL set when left empty, URLs without
// a trailing slash, and the allowed numbers as E.164 (whatsapp:+1… is
// +1…), in a list of its own: the caller's is left as it was.
func (t Twilio) withDefaults() Twilio {
	t.PublicURL = strings.TrimSuffix(t.PublicURL, "/")
	if t.APIURL == "" {
		t.APIURL = "https://api.twilio.com"
	}
	t.APIURL = strings.TrimSuffix(t.APIURL, "/")
	t.Allowed = slices.Clone(t.Allowed)
	for i, n := range t.Allowed {
		t.Allowed[i], _ = contract.TwilioNumber(strings.TrimSpace(n))
	}
	return t
}

// twilioNeeded is why a Twilio setting left empty is refused.
const twilioNeeded = "required for WhatsApp and SMS"

// validate refuses each bad setting of t, the missing ones all at once.
func (t Twilio) validate() error {
	var errs []error
	switch {
	case t.AuthToken == "":
		errs = append(errs, bad("Twilio.AuthToken", nil, twilioNeeded))
	case !contract.TwilioCredential(t.AuthToken):
		errs = append(errs, bad("Twilio.AuthToken", nil, contract.TwilioCredentialRule))
	}
	if t.AccountSID != "" && !contract.TwilioCredential(t.AccountSID) {
		errs = append(errs, bad("Twilio.AccountSID", t.AccountSID, contract.TwilioCredentialRule))
	}
	switch {
	case t.PublicURL == "":
		errs = append(errs, bad("Twilio.PublicURL", nil, twilioNeeded))
	case !contract.BaseURL(t.PublicURL):
		errs = append(errs, bad("Twilio.PublicURL", t.PublicURL, "want the https://host[/prefix] Twilio calls, without a query"))
	}
	if !contract.BaseURL(t.APIURL) {
		errs = append(errs, bad("Twilio.APIURL", t.APIURL, "want http(s)://host[/prefix], without a query"))
	}
	if len(t.Allowed) == 0 {
		errs = append(errs, bad("Twilio.Allowed", nil, "empty, so nobody could use textslash; list the E.164 numbers that may"))
	}
	for _, n := range t.Allowed {
		if _, err := contract.PhoneUser(contract.ChannelSMS, n); err != nil {
			errs = append(errs, bad("Twilio.Allowed", n, "not an E.164 number; want one like +15551234567"))
		}
	}
	return errors.Join(errs...)
}

// twilioForm reads and authenticates a Twilio webhook: the form, once its
// X-Twilio-Signature proved it came from Twilio. On failure it has
// answered the request and returns nil.
func (i *Ingress) twilioForm(w http.ResponseWriter, r *http.Request) url.Values {
	r.Body = http.MaxBytesReader(w, r.Body, i.cfg.MaxBodyBytes)
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
	signed := i.cfg.Twilio.PublicURL + r.URL.RequestURI()
	if !i.validator.ValidateBody(signed, body, r.Header.Get("X-Twilio-Signature")) {
		i.log.Warn().Str("remote", r.RemoteAddr).Str("url", signed).Msg("twilio signature invalid; refused (is PUBLIC_URL the URL Twilio calls?)")
		http.Error(w, "invalid signature", http.StatusForbidden)
		return nil
	}
	return form
}

// twilioWebhook takes one inbound WhatsApp or SMS message.
func (i *Ingress) twilioWebhook(w http.ResponseWriter, r *http.Request) {
	form := i.twilioForm(w, r)
	if form == nil {
		return
	}
	sid := form.Get("MessageSid")
	if !sidRE.MatchString(sid) {
		http.Error(w, "missing or malformed MessageSid", http.StatusBadRequest)
		return
	}
	from := form.Get("From")
	ctx, log := i.traced(r)
	log = log.With().Str("sid", sid).Logger()
	u, err := contract.TwilioUser(from)
	if err != nil {
		// Signed by Twilio but from a sender we cannot answer (another
		// channel's address): tell Twilio it was handled.
		log.Warn().Str("from", from).Msg("twilio message from an unsupported sender; ignored")
		twiml(w)
		return
	}
	log = log.With().Str("user", u.Key()).Logger()
	if !i.inbox.Allows(u) {
		if in, ok := i.pairIn(ctx, log, u, sid, form.Get("Body")); ok {
			if err := i.Publish(ctx, in); err != nil {
				log.Error().Err(err).Msg("welcome not stored")
			}
		} else {
			log.Info().Msg("sender not in ALLOWED_PHONE_NUMBERS nor paired in; ignored")
		}
		twiml(w)
		return
	}
	in := contract.Inbound{ID: sid, User: u, Text: twilioText(form)}
	n, _ := strconv.Atoi(form.Get("NumMedia"))
	for k := range min(max(n, 0), twilioMaxMedia) {
		m := contract.Media{URL: form.Get("MediaUrl" + strconv.Itoa(k)), ContentType: form.Get("MediaContentType" + strconv.Itoa(k))}
		if m.URL == "" || strings.HasPrefix(m.URL, contract.StoredMedia) {
			continue
		}
		// WhatsApp's voice notes (audio/ogg) and MMS audio are spoken
		// messages: transcribed, then run.
		m.Voice = strings.HasPrefix(m.ContentType, "audio/")
		in.Media = append(in.Media, m)
	}
	i.openWindow(ctx, log, u, sid)
	if err := i.Publish(ctx, in); err != nil {
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
func (i *Ingress) openWindow(ctx context.Context, log zerolog.Logger, u contract.User, sid string) {
	if u.Channel != contract.ChannelWhatsApp {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	held, err := i.heldFor(ctx, u)
	if err != nil {
		log.Warn().Err(err).Msg("held messages not looked up; they wait for the next message")
		return
	}
	if !held {
		return
	}
	ev := contract.NewWindow(u, sid)
	if err := bus.PublishEvent(ctx, i.js, ev, contract.MsgID(u, sid, string(contract.KindWindow))); err != nil {
		log.Error().Err(err).Msg("window event not published; held messages wait for the next message")
		return
	}
	log.Info().Msg("the person wrote while messages were held for them: window event published")
}

// heldFor reports whether egress holds messages for u: contract.HeldKey
// in the egress bucket, the one read of that bucket ingress may do
// (nats.conf).
func (i *Ingress) heldFor(ctx context.Context, u contract.User) (bool, error) {
	return bus.HasKey(ctx, i.js.Conn(), contract.BucketEgress, contract.HeldKey(u))
}

// twilioText is what the person said: the payload of the quick-reply
// button they pressed when it is one of textslash's choices (egress shows
// them as WhatsApp quick-reply buttons, whose titles may read otherwise),
// else the button's title, else the message's body.
func twilioText(form url.Values) string {
	if p := form.Get("ButtonPayload"); contract.IsChoice(p) {
		return p
	}
	if t := form.Get("ButtonText"); t != "" {
		return t
	}
	return form.Get("Body")
}

// twilioStatus takes a status callback about a message sent to a person
// and publishes it as a delivery event: egress waits for it to keep a
// user's messages in order, and it tells why a message did not arrive.
func (i *Ingress) twilioStatus(w http.ResponseWriter, r *http.Request) {
	form := i.twilioForm(w, r)
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
		i.log.Warn().Str("sid", sid).Str("to", form.Get("To")).Msg("twilio status for an unsupported recipient; ignored")
		twiml(w)
		return
	}
	code, _ := strconv.Atoi(form.Get("ErrorCode"))
	ev := contract.NewDelivery(u, sid, status, code)
	if err := bus.PublishEvent(r.Context(), i.js, ev, contract.MsgID(u, sid, status)); err != nil {
		i.log.Error().Err(err).Str("sid", sid).Msg("twilio status not stored")
		http.Error(w, "could not take the status", http.StatusServiceUnavailable)
		return
	}
	l := i.log.Debug()
	if code != 0 {
		l = i.log.Warn()
	}
	l.Str("user", u.Key()).Str("sid", sid).Str("status", status).Int("code", code).Msg("twilio delivery status")
	twiml(w)
}

func twiml(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, emptyTwiML)
}

func newValidator(token string) *client.RequestValidator {
	rv := client.NewRequestValidator(token)
	return &rv
}

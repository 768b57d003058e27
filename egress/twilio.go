package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"
	twilio "github.com/twilio/twilio-go"
	"github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"
	messaging "github.com/twilio/twilio-go/rest/messaging/v2"

	"github.com/textslash/textslash/contract"
)

// Twilio configures delivery to WhatsApp and SMS through Twilio's Messages
// API.
type Twilio struct {
	// AccountSID and AuthToken authenticate: letters and digits only.
	AccountSID string
	AuthToken  string
	// From is the sending number in E.164; on WhatsApp it is sent as
	// whatsapp:<From> (contract.TwilioAddress), and it may be written
	// that way too.
	From string
	// MessagingServiceSID sends through a Messaging Service instead of From.
	MessagingServiceSID string
	// APIURL replaces https://api.twilio.com (tests, proxies).
	APIURL string
	// PublicURL is where Twilio fetches images and posts status callbacks.
	PublicURL string
	// Allowed are the E.164 numbers that may be answered: an event for
	// any other number is dropped, whoever published it.
	Allowed []string
	// StatusCallbacks asks Twilio for status callbacks and sends a person's
	// next message only once the previous one is sent (Twilio does not
	// keep consecutive messages in order by itself).
	StatusCallbacks bool
	// SentWait bounds the wait for a status callback; then the next
	// message goes anyway (default 15 s).
	SentWait time.Duration
	// Rules of the WhatsApp and SMS channels; zero values take defaults.
	// WhatsApp shows a typing indicator every 20 s while a run works (a
	// negative TypingEvery: never); SMS has none.
	WhatsApp channel.Rules
	SMS      channel.Rules
	// Retry of failed sends.
	Retry channel.Retry
	// WindowContentSID is an approved WhatsApp template (a Content SID,
	// HX…, sent without variables) that tells a person something waits
	// for them, sent once when a message to them is refused outside
	// WhatsApp's 24-hour window. Either way
	// the refused message is held and sent when they write again.
	WindowContentSID string
}

// Twilio's limits.
const (
	twilioBodyLimit     = 1600
	twilioWhatsAppImage = 5 << 20
	// twilioWhatsAppDocument: WhatsApp takes documents (files) up to 16 MB.
	twilioWhatsAppDocument = 16 << 20
	twilioMMSImage         = 1 << 20
	twilioMMSMedia         = 10
	twilioCodeRateLimit    = 20429
	twilioCodeOutOfReply   = 63016 // outside WhatsApp's 24-hour customer service window
	// twilioTypingEvery: Twilio shows a typing indicator up to 25 s, or
	// until the next message.
	twilioTypingEvery = 20 * time.Second
)

// twilioSentWait is how long a send waits for the previous message's
// status callback by default.
const twilioSentWait = 15 * time.Second

// withDefaults is t with its defaults: the channels' limits, numbers
// written as WhatsApp addresses made bare (contract.TwilioAddress writes
// them back per channel), URLs without their trailing slash.
func (t Twilio) withDefaults() Twilio {
	t.From, _ = contract.TwilioNumber(t.From)
	if t.Allowed != nil {
		allowed := make([]string, len(t.Allowed)) // the caller's slice stays as it was
		for i, n := range t.Allowed {
			allowed[i], _ = contract.TwilioNumber(n)
		}
		t.Allowed = allowed
	}
	t.APIURL, t.PublicURL = trimURL(t.APIURL), trimURL(t.PublicURL)
	if t.SentWait == 0 {
		t.SentWait = twilioSentWait
	}
	t.WhatsApp = t.WhatsApp.WithDefaults(channel.Rules{BodyLimit: twilioBodyLimit, MaxMedia: 1, MaxImageBytes: twilioWhatsAppImage, MaxFileBytes: twilioWhatsAppDocument})
	if t.WhatsApp.TypingEvery == 0 {
		t.WhatsApp.TypingEvery = twilioTypingEvery
	}
	t.SMS = t.SMS.WithDefaults(channel.Rules{BodyLimit: twilioBodyLimit, MaxMedia: twilioMMSMedia, MaxImageBytes: twilioMMSImage})
	t.Retry = t.Retry.WithDefaults()
	return t
}

// validate refuses every setting of t (defaulted) that is wrong, the
// missing ones first.
func (t Twilio) validate() error {
	const need = "required for WhatsApp and SMS"
	var errs []error
	for _, s := range []struct {
		setting string
		missing bool
		why     string
	}{
		{"Twilio.AccountSID", t.AccountSID == "", need},
		{"Twilio.AuthToken", t.AuthToken == "", need},
		{"Twilio.From", t.From == "" && t.MessagingServiceSID == "", need + " (or a Messaging Service SID): the number they are sent from"},
		{"Twilio.PublicURL", t.PublicURL == "", need + ": where Twilio fetches images and posts status callbacks"},
		{"Twilio.Allowed", len(t.Allowed) == 0, need + ": the numbers that may be answered (none: nobody could be)"},
	} {
		if s.missing {
			errs = append(errs, bad(s.setting, nil, s.why))
		}
	}
	return errors.Join(append(errs, t.validateValues()...)...)
}

// validateValues refuses the settings of t that are set but wrong.
func (t Twilio) validateValues() []error {
	var errs []error
	if t.AccountSID != "" && !contract.TwilioCredential(t.AccountSID) {
		errs = append(errs, bad("Twilio.AccountSID", t.AccountSID, contract.TwilioCredentialRule))
	}
	if t.AuthToken != "" && !contract.TwilioCredential(t.AuthToken) {
		errs = append(errs, bad("Twilio.AuthToken", nil, contract.TwilioCredentialRule)) // a secret: never shown
	}
	if _, err := contract.PhoneUser(contract.ChannelSMS, t.From); t.From != "" && err != nil {
		errs = append(errs, bad("Twilio.From", t.From, "want E.164 like +15551234567"))
	}
	if t.APIURL != "" && !contract.BaseURL(t.APIURL) {
		errs = append(errs, bad("Twilio.APIURL", t.APIURL, "want http(s)://host[:port]"))
	}
	if t.PublicURL != "" && !contract.BaseURL(t.PublicURL) {
		errs = append(errs, bad("Twilio.PublicURL", t.PublicURL, "want the http(s)://host[:port] Twilio reaches textslash at, without a query"))
	}
	if t.WindowContentSID != "" && !contentSidRE.MatchString(t.WindowContentSID) {
		errs = append(errs, bad("Twilio.WindowContentSID", t.WindowContentSID, "want a Content SID, HX and 32 hex digits"))
	}
	for _, n := range t.Allowed {
		if _, err := contract.PhoneUser(contract.ChannelSMS, n); err != nil {
			errs = append(errs, bad("Twilio.Allowed", n, "not an E.164 number: want one like +15551234567"))
		}
	}
	errs = append(errs, notNegative("Twilio.SentWait", t.SentWait))
	errs = append(errs, t.WhatsApp.Validate("egress", "Twilio.WhatsApp")...)
	errs = append(errs, t.SMS.Validate("egress", "Twilio.SMS")...)
	return append(errs, t.Retry.Validate("egress", "Twilio.Retry")...)
}

// addTwilio adds the WhatsApp and SMS channels of t (validated) to e's
// pusher: WhatsApp with its 24-hour reply window (window.go), both
// waiting for status callbacks when t asks for them.
func (e *Egress) addTwilio(t Twilio) {
	api := newTwilioAPI(t)
	media := func(img contract.Image) string { return t.PublicURL + e.cfg.Signer.URL(img, time.Now()) }
	p := e.pusher(t.Retry)
	p.channels[contract.ChannelWhatsApp] = outlet{rules: t.WhatsApp, sender: &twilioSender{cfg: t, api: api, channel: contract.ChannelWhatsApp}, mediaURL: media, waitSent: t.StatusCallbacks,
		window: &window{closed: twilioCodeOutOfReply, template: t.WindowContentSID}}
	p.channels[contract.ChannelSMS] = outlet{rules: t.SMS, sender: &twilioSender{cfg: t, api: api, channel: contract.ChannelSMS}, mediaURL: media, waitSent: t.StatusCallbacks}
	if t.StatusCallbacks {
		p.status = newSentWaiter(t.SentWait)
	}
}

// twilioSender sends through Twilio's Messages API with twilio-go; on
// WhatsApp, choices go as quick-reply buttons (twilio_content.go) and a
// typing indicator shows while a run works.
type twilioSender struct {
	cfg Twilio
	api *twilio.RestClient
	// channel is contract.ChannelWhatsApp or ChannelSMS: the form of
	// its addresses (contract.TwilioAddress).
	channel string
	quick   quickReplies
}

// newTwilioAPI is twilio-go's client of api.twilio.com, content.twilio.com
// and messaging.twilio.com, all three sent to APIURL when it is set.
func newTwilioAPI(cfg Twilio) *twilio.RestClient {
	// Egress sends to many people at once: keep a connection for each
	// (http.DefaultTransport keeps 2 idle per host, so under load most
	// sends dialled, and shook hands for TLS, anew).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	hc := &http.Client{
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     tr,
	}
	if cfg.APIURL != "" {
		base, _ := url.Parse(cfg.APIURL) // checked by Validate
		hc.Transport = rebase{base: base, next: tr}
	}
	c := &client.Client{Credentials: client.NewCredentials(cfg.AccountSID, cfg.AuthToken), HTTPClient: hc}
	c.SetAccountSid(cfg.AccountSID)
	return twilio.NewRestClientWithParams(twilio.ClientParams{Client: c})
}

// rebase sends requests meant for Twilio's API hosts to another base URL:
// twilio-go has no setting for it.
type rebase struct {
	base *url.URL
	next http.RoundTripper
}

func (r rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.base.Scheme, r.base.Host
	req.URL.Path = strings.TrimSuffix(r.base.Path, "/") + req.URL.Path
	req.Host = r.base.Host
	return r.next.RoundTrip(req)
}

// Send creates one message; on WhatsApp, one with choices is a quick reply
// (and may take two). twilio-go takes no context: the HTTP client's
// timeout bounds each call.
func (s *twilioSender) Send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
	to, ok := u.Phone()
	if !ok {
		return "", &channel.SendError{Err: fmt.Errorf("user %s has no phone number", u), Permanent: true}
	}
	switch {
	case m.Template != "":
		p := s.params(to, channel.Message{})
		p.SetContentSid(m.Template)
		return s.create(p)
	case s.channel == contract.ChannelWhatsApp && quickReplyable(m.Choices):
		return s.sendWithButtons(zerolog.Ctx(ctx), to, m)
	}
	return s.create(s.params(to, m))
}

// params are the create parameters of m to the number to.
func (s *twilioSender) params(to string, m channel.Message) *openapi.CreateMessageParams {
	p := &openapi.CreateMessageParams{}
	p.SetTo(contract.TwilioAddress(s.channel, to))
	if s.cfg.MessagingServiceSID != "" {
		p.SetMessagingServiceSid(s.cfg.MessagingServiceSID)
	} else {
		p.SetFrom(contract.TwilioAddress(s.channel, s.cfg.From))
	}
	if m.Body != "" {
		p.SetBody(m.Body)
	}
	if len(m.Media) > 0 {
		p.SetMediaUrl(m.Media)
	}
	if s.cfg.StatusCallbacks {
		p.SetStatusCallback(s.cfg.PublicURL + StatusCallbackPath)
	}
	return p
}

// create sends one message; failures are *SendError.
func (s *twilioSender) create(p *openapi.CreateMessageParams) (string, error) {
	resp, err := s.api.Api.CreateMessage(p)
	if err != nil {
		return "", twilioError(err)
	}
	if resp.Sid == nil {
		return "", &channel.SendError{Err: errors.New("twilio answered without a message sid")}
	}
	return *resp.Sid, nil
}

// Find looks among the person's latest messages for m created since then:
// the send a crash left unrecorded. Twilio keeps no idempotency keys, so
// the body, the media count and the time are the match (a quick reply's
// body is its text); the person's messages go out one at a time, so the
// newest match is the one.
func (s *twilioSender) Find(_ context.Context, u contract.User, m channel.Message, since time.Time) (string, error) {
	to, ok := u.Phone()
	if !ok {
		return "", nil
	}
	p := &openapi.ListMessageParams{}
	p.SetTo(contract.TwilioAddress(s.channel, to))
	p.SetPageSize(20)
	page, err := s.api.Api.PageMessage(p, "", "")
	if err != nil {
		return "", twilioError(err)
	}
	// Twilio's clock and ours may differ, and it keeps whole seconds.
	since = since.Add(-findSlack)
	for _, msg := range page.Messages {
		if msg.Sid == nil || msg.Body == nil || *msg.Body != m.Body || deref(msg.NumMedia) != strconv.Itoa(len(m.Media)) {
			continue
		}
		if msg.DateCreated != nil {
			if at, err := time.Parse(time.RFC1123Z, *msg.DateCreated); err == nil && at.Before(since) {
				continue
			}
		}
		return *msg.Sid, nil // newest first
	}
	return "", nil
}

// contentSidRE is a Twilio content's SID.
var contentSidRE = regexp.MustCompile(`^HX[0-9a-fA-F]{32}$`)

// messageSidRE is a Twilio message's SID (SM…) or media message's (MM…):
// a WhatsApp person's job id, the message a typing indicator answers.
var messageSidRE = regexp.MustCompile(`^(SM|MM)[0-9a-fA-F]{32}$`)

// Typing shows a WhatsApp person "typing…" in answer to their message
// jobID, for up to 25 s or until the next message; it also marks their
// message read. SMS has no typing indicator, and a job that did not come
// from a Twilio message (a SID) has nothing to answer: both are no-ops.
func (s *twilioSender) Typing(_ context.Context, _ contract.User, jobID string) error {
	if s.channel != contract.ChannelWhatsApp || !messageSidRE.MatchString(jobID) {
		return nil
	}
	p := &messaging.CreateTypingIndicatorParams{}
	p.SetChannel("whatsapp").SetMessageId(jobID)
	if _, err := s.api.MessagingV2.CreateTypingIndicator(p); err != nil {
		return fmt.Errorf("typing indicator: %w", err)
	}
	return nil
}

// findSlack is how much earlier than our record of a send Twilio's may be.
const findSlack = 5 * time.Second

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// StatusCallbackPath is where ingress takes Twilio's status callbacks.
const StatusCallbackPath = "/twilio/status"

// twilioError classifies a failed create: rate limits, server errors and
// network failures are worth another try; validation errors are not.
func twilioError(err error) *channel.SendError {
	var te *client.TwilioRestError
	if errors.As(err, &te) {
		se := &channel.SendError{Err: err, Code: te.Code, Status: te.Status}
		se.Permanent = !(te.Status == http.StatusTooManyRequests || te.Code == twilioCodeRateLimit || te.Status >= 500)
		return se
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return &channel.SendError{Err: err}
	}
	// twilio-go could not decode an error answer (a proxy's 502 page, say):
	// transient as far as anyone can tell.
	return &channel.SendError{Err: err}
}

// Explain turns a Twilio error code into what an operator should know.
func (*twilioSender) Explain(code int) string {
	switch code {
	case twilioCodeOutOfReply:
		return "outside WhatsApp's 24-hour window: the person must message first (or send a template)"
	case 21211:
		return "invalid To number"
	case 21408, 21612:
		return "this number cannot be reached from the sending number"
	case 21610:
		return "the person replied STOP"
	case 21617:
		return "body too long"
	case 20003:
		return "authentication failed: check TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN"
	}
	return ""
}

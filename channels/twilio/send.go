package twilio

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

	"github.com/rs/zerolog"
	twilio "github.com/twilio/twilio-go"
	"github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"
	messaging "github.com/twilio/twilio-go/rest/messaging/v2"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// sender sends through Twilio's Messages API with twilio-go; on
// WhatsApp, choices go as quick-reply buttons (twilio_content.go) and a
// typing indicator shows while a run works.
type sender struct {
	cfg Config
	api *twilio.RestClient
	// channel is contract.ChannelWhatsApp or ChannelSMS: the form of
	// its addresses (contract.TwilioAddress).
	channel string
	quick   quickReplies
}

// newAPI is twilio-go's client of api.twilio.com, content.twilio.com
// and messaging.twilio.com, all three sent to APIURL when it is set.
func newAPI(cfg Config) *twilio.RestClient {
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
func (s *sender) Send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
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
func (s *sender) params(to string, m channel.Message) *openapi.CreateMessageParams {
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
func (s *sender) create(p *openapi.CreateMessageParams) (string, error) {
	resp, err := s.api.Api.CreateMessage(p)
	if err != nil {
		return "", sendError(err)
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
func (s *sender) Find(_ context.Context, u contract.User, m channel.Message, since time.Time) (string, error) {
	to, ok := u.Phone()
	if !ok {
		return "", nil
	}
	p := &openapi.ListMessageParams{}
	p.SetTo(contract.TwilioAddress(s.channel, to))
	p.SetPageSize(20)
	page, err := s.api.Api.PageMessage(p, "", "")
	if err != nil {
		return "", sendError(err)
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

// messageSidRE is a Twilio message's SID (SM…) or media message's (MM…):
// a WhatsApp person's job id, the message a typing indicator answers.
var messageSidRE = regexp.MustCompile(`^(SM|MM)[0-9a-fA-F]{32}$`)

// Typing shows a WhatsApp person "typing…" in answer to their message
// jobID, for up to 25 s or until the next message; it also marks their
// message read. SMS has no typing indicator, and a job that did not come
// from a Twilio message (a SID) has nothing to answer: both are no-ops.
func (s *sender) Typing(_ context.Context, _ contract.User, jobID string) error {
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

// StatusCallbackPath is where Twilio's status callbacks are taken.
const StatusCallbackPath = "/twilio/status"

// sendError classifies a failed create: rate limits, server errors and
// network failures are worth another try; validation errors are not.
func sendError(err error) *channel.SendError {
	var te *client.TwilioRestError
	if errors.As(err, &te) {
		se := &channel.SendError{Err: err, Code: te.Code, Status: te.Status}
		se.Permanent = !(te.Status == http.StatusTooManyRequests || te.Code == codeRateLimit || te.Status >= 500)
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
func (*sender) Explain(code int) string {
	switch code {
	case codeOutOfReply:
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

package contract

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"
)

// Pairing codes are the dispatcher's alone: it makes them, and it alone
// reads, uses up and counts them, as a request-reply service a channel
// asks with a stranger's message that looks like a code. A channel's NATS
// user reads nothing of the pairing bucket and writes nothing of the
// people bucket: a permission on the code's key (code.*) would let it send
// a literal * and read the newest pending code, and a write would mint
// codes or pair anyone in. The service takes the channel from the subject
// the request came on, so a channel pairs in only its own people.

// PairSubject is the pairing service of one channel's strangers:
// ts.svc.pair.<channel>. A PairRequest in, a PairReply out (or a micro
// error: 400 an unreadable request or a person of another channel, 503
// the buckets).
func PairSubject(channel string) string { return subjectPair + "." + channel }

const subjectPair = "ts.svc.pair"

// PairRequest asks to pair User in with Code, the text of their message.
type PairRequest struct {
	V    int    `json:"v"`
	User User   `json:"user"`
	Code string `json:"code"`
}

func (p *PairRequest) setVersion()  { p.V = Version }
func (p *PairRequest) version() int { return p.V }
func (p *PairRequest) validate() error {
	return p.User.Validate()
}

// PairReply says whether the person was paired in.
type PairReply struct {
	V      int  `json:"v"`
	Paired bool `json:"paired"`
}

func (p *PairReply) setVersion()  { p.V = Version }
func (p *PairReply) version() int { return p.V }

// pairTimeout bounds a pairing request.
const pairTimeout = 5 * time.Second

// RequestPair asks the pairing service to pair u in with text: false,
// with no request at all, when text cannot be a code.
func RequestPair(ctx context.Context, nc *nats.Conn, u User, text string) (bool, error) {
	code, ok := readCode(text)
	if !ok {
		return false, nil
	}
	data, err := Encode(&PairRequest{User: u, Code: code})
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, pairTimeout)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, PairSubject(u.Channel), data)
	if err != nil {
		return false, fmt.Errorf("pairing service: %w", err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		return false, fmt.Errorf("pairing service: %s %s", code, m.Header.Get(micro.ErrorHeader))
	}
	var r PairReply
	if err := Decode(m.Data, &r); err != nil {
		return false, fmt.Errorf("pairing service: %w", err)
	}
	return r.Paired, nil
}

// ServePairing answers every channel's pairing requests with p until ctx
// ends (micro service "pairing", queue group "pairing": any number of
// dispatchers may serve it).
func ServePairing(ctx context.Context, nc *nats.Conn, p *Pairing, log zerolog.Logger) error {
	svc, err := micro.AddService(nc, micro.Config{
		Name:        "pairing",
		Version:     "1.0.0",
		Description: "textslash: pairs strangers in with the codes an admin made",
		QueueGroup:  "pairing",
	})
	if err != nil {
		return fmt.Errorf("pairing service: %w", err)
	}
	h := micro.HandlerFunc(func(req micro.Request) { servePair(ctx, p, log, req) })
	if err := svc.AddEndpoint("pair", h, micro.WithEndpointSubject(subjectPair+".*")); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("pairing endpoint: %w", err)
	}
	<-ctx.Done()
	return svc.Stop()
}

// servePair answers one pairing request.
func servePair(ctx context.Context, p *Pairing, log zerolog.Logger, req micro.Request) {
	var r PairRequest
	if err := Decode(req.Data(), &r); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	log = log.With().Str("user", r.User.Key()).Logger()
	if req.Subject() != PairSubject(r.User.Channel) {
		log.Warn().Str("subject", req.Subject()).Msg("pairing refused: a person of another channel than the subject's")
		_ = req.Error("400", "a person of another channel", nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, pairTimeout)
	defer cancel()
	ok, err := p.Redeem(ctx, r.User, r.Code)
	if err != nil {
		log.Error().Err(err).Msg("pairing code not checked")
		_ = req.Error("503", "pairing unavailable", nil)
		return
	}
	if ok {
		log.Info().Msg("paired in with a code")
	}
	data, err := Encode(&PairReply{Paired: ok})
	if err != nil {
		_ = req.Error("500", err.Error(), nil)
		return
	}
	_ = req.Respond(data)
}

package access

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Pairing codes are the dispatcher's alone: it makes them, and it alone
// reads, uses up and counts them, as a request-reply service a channel
// asks with a stranger's message that looks like a code. A channel's NATS
// user reads nothing of the pairing bucket and writes nothing of the
// people bucket: a permission on the code's key (code.*) would let it send
// a literal * and read the newest pending code, and a write would mint
// codes or pair anyone in. The service takes the channel from the subject
// the request came on, so a channel pairs in only its own people.

// pairTimeout bounds a pairing request.
const pairTimeout = 5 * time.Second

// RequestPair asks the pairing service to pair u in with text: false,
// with no request at all, when text cannot be a code.
func RequestPair(ctx context.Context, nc *nats.Conn, u contract.User, text string) (bool, error) {
	code, ok := readCode(text)
	if !ok {
		return false, nil
	}
	data, err := contract.Encode(&contract.PairRequest{User: u, Code: code})
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, pairTimeout)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, contract.PairSubject(u.Channel), data)
	if err != nil {
		return false, fmt.Errorf("pairing service: %w", err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		return false, fmt.Errorf("pairing service: %s %s", code, m.Header.Get(micro.ErrorHeader))
	}
	var r contract.PairReply
	if err := contract.Decode(m.Data, &r); err != nil {
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
	if err := svc.AddEndpoint("pair", h, micro.WithEndpointSubject(contract.SubjectPair+".*")); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("pairing endpoint: %w", err)
	}
	<-ctx.Done()
	return svc.Stop()
}

// servePair answers one pairing request.
func servePair(ctx context.Context, p *Pairing, log zerolog.Logger, req micro.Request) {
	var r contract.PairRequest
	if err := contract.Decode(req.Data(), &r); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	log = log.With().Str("user", r.User.Key()).Logger()
	if req.Subject() != contract.PairSubject(r.User.Channel) {
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
	data, err := contract.Encode(&contract.PairReply{Paired: ok})
	if err != nil {
		_ = req.Error("500", err.Error(), nil)
		return
	}
	_ = req.Respond(data)
}

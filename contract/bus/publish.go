package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publish publishes data on subject with msgID as its Nats-Msg-Id, and
// ctx's trace (WithTrace) as its HeaderTrace, and waits for JetStream's
// acknowledgement, asking again with the same id when an
// attempt goes unanswered (2 s, then 4 s, at most 8 s each) until ctx
// ends. On a cluster the server leading a stream can be lost after it
// stored a message and before it answered; a new leader is elected within
// a second or two and answers the next attempt, where a single long wait
// would hang until ctx's deadline. The id makes asking again harmless.
//
// An acknowledgement that calls the message a duplicate because an earlier
// attempt of this same call was stored is reported as not a duplicate:
// ack.Duplicate means some other publish stored this id first.
func Publish(ctx context.Context, js jetstream.JetStream, subject string, data []byte, msgID string, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if msgID == "" {
		return nil, errors.New("publish: no message id")
	}
	opts = append(opts, jetstream.WithMsgID(msgID))
	msg := NewMsg(ctx, subject, data) // every attempt sends the same headers
	wait := 2 * time.Second
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, wait)
		ack, err := js.PublishMsg(actx, msg, opts...)
		cancel()
		if err == nil {
			if ack.Duplicate && attempt > 1 {
				ours, err := storedIs(ctx, js, ack, data)
				if err != nil {
					return nil, fmt.Errorf("publish %s: read back a duplicate: %w", subject, err)
				}
				ack.Duplicate = !ours
			}
			return ack, nil
		}
		if ctx.Err() != nil || !retryable(err) {
			return nil, err
		}
		wait = min(2*wait, 8*time.Second)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// retryable tells apart a publish that may succeed if asked again (no
// answer, no leader yet, a duplicate still being stored) from one the
// stream refused (a full queue, a wrong subject, a full disk).
func retryable(err error) bool {
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) {
		return false // asking again cannot help
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return true
	}
	switch apiErr.ErrorCode {
	case errClusterNotAvailable, errClusterNotLeader, errDuplicateInProcess, errLastSeqNotReady:
		return true
	}
	return false
}

// JetStream's answers while a stream's leader is being elected, or while
// a message of the same id is still being stored, on a cluster.
const (
	errClusterNotAvailable jetstream.ErrorCode = 10008
	errClusterNotLeader    jetstream.ErrorCode = 10009
	errDuplicateInProcess  jetstream.ErrorCode = 10158
	errLastSeqNotReady     jetstream.ErrorCode = 10163
)

// storedIs reports whether the message ack points at holds data: the
// stored copy of an earlier attempt of the same publish.
func storedIs(ctx context.Context, js jetstream.JetStream, ack *jetstream.PubAck, data []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, ack.Stream)
	if err != nil {
		return false, err
	}
	m, err := s.GetMsg(ctx, ack.Sequence)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil // consumed and gone: not ours to know
	}
	if err != nil {
		return false, err
	}
	return bytes.Equal(m.Data, data), nil
}

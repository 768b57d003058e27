package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// PublishEvent stamps and publishes ev on its subject, deduplicated by
// msgID (build it with MsgID), and waits for JetStream's acknowledgement
// (see Publish).
//
// An event's text longer than MaxEventText is cut there, with a note that
// says so (CutText): a reply of any size reaches the person, whole or cut,
// never lost to NATS's limit on a message's size.
func PublishEvent(ctx context.Context, js jetstream.JetStream, ev contract.Event, msgID string) error {
	_, err := PublishEventAck(ctx, js, ev, msgID)
	return err
}

// PublishEventAck is PublishEvent for a caller that needs JetStream's
// acknowledgement: ack.Duplicate tells that another publish stored msgID
// first.
func PublishEventAck(ctx context.Context, js jetstream.JetStream, ev contract.Event, msgID string) (*jetstream.PubAck, error) {
	if ev.At.IsZero() {
		ev.At = time.Now().UTC()
	}
	ev.Text = contract.CutText(ev.Text)
	data, err := contract.Encode(&ev)
	if err != nil {
		return nil, err
	}
	ack, err := Publish(ctx, js, contract.EventSubject(ev.User, ev.Kind), data, msgID)
	if err != nil {
		return nil, fmt.Errorf("publish %s event: %w", ev.Kind, err)
	}
	return ack, nil
}

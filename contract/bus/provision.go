package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// Options tunes Provision.
type Options struct {
	// Replicas of every stream and bucket; 1 on a single server, 3 on a cluster.
	Replicas int
	// MediaTTL overrides the image lifetime.
	MediaTTL time.Duration
	// Channels are the plug-in channels (any but BuiltInChannels) that get
	// a media store of their own, media-<name> (MediaBucketOf); nil for
	// none. A built-in channel named here changes nothing.
	Channels []string
}

// Streams returns the configuration of every stream.
func Streams(o Options) []jetstream.StreamConfig {
	o = o.withDefaults()
	return []jetstream.StreamConfig{
		{
			Name:        contract.StreamIn,
			Description: "inbound messages from every channel, one subject per user",
			Subjects:    []string{contract.SubjectIn + ".>"},
			Retention:   jetstream.WorkQueuePolicy,
			Duplicates:  contract.DedupWindow,
			MaxAge:      7 * 24 * time.Hour,
			Storage:     jetstream.FileStorage,
			Replicas:    o.Replicas,
			MaxBytes:    contract.InMaxBytes,
			MaxMsgSize:  contract.MaxMsgBytes,
			Discard:     jetstream.DiscardNew,
		},
		{
			Name:        contract.StreamJobs,
			Description: "messages cleared to run now, at most one per user",
			Subjects:    []string{contract.SubjectJob + ".>"},
			Retention:   jetstream.WorkQueuePolicy,
			Duplicates:  contract.DedupWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    o.Replicas,
			MaxBytes:    contract.JobsMaxBytes,
			MaxMsgSize:  contract.MaxMsgBytes,
			Discard:     jetstream.DiscardNew,
		},
		{
			// The per-user queue is the broker's per-subject limit: the
			// (QueueLimit+1)th waiting message is refused by the server.
			Name:                 contract.StreamQueue,
			Description:          "messages waiting for their user's current run to end",
			Subjects:             []string{contract.SubjectQueue + ".>"},
			Retention:            jetstream.LimitsPolicy,
			MaxMsgsPerSubject:    contract.QueueLimit,
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			Duplicates:           contract.DedupWindow,
			AllowDirect:          true,
			Storage:              jetstream.FileStorage,
			Replicas:             o.Replicas,
			MaxBytes:             contract.QueueMaxBytes,
			MaxMsgSize:           contract.MaxMsgBytes,
		},
		{
			// One pending schedule per user and subject: a new one replaces
			// the old, a purge cancels it.
			Name:              contract.StreamTimers,
			Description:       "approval timeouts as message schedules, and their firings",
			Subjects:          []string{contract.SubjectTimer + ".>"},
			Retention:         jetstream.LimitsPolicy,
			MaxMsgsPerSubject: 1,
			AllowMsgSchedules: true,
			Duplicates:        contract.DedupWindow,
			Storage:           jetstream.FileStorage,
			Replicas:          o.Replicas,
			// One timer per user: 16 MB holds tens of thousands. The server
			// allows message schedules only with discard old.
			MaxBytes:   contract.TimersMaxBytes,
			MaxMsgSize: contract.MaxMsgBytes,
		},
		{
			Name:        contract.StreamEvents,
			Description: "everything that happens to a user's messages, for egress and taps",
			Subjects:    []string{contract.SubjectEv + ".>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      contract.EventsMaxAge,
			Duplicates:  contract.DedupWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    o.Replicas,
			MaxBytes:    contract.EventsMaxBytes,
			MaxMsgSize:  contract.MaxMsgBytes,
		},
	}
}

// Consumers returns the durable consumers every deployment has, by stream.
// Channel egress consumers are made by EgressConsumer when a channel starts.
func Consumers() map[string][]jetstream.ConsumerConfig {
	return map[string][]jetstream.ConsumerConfig{
		contract.StreamIn: {{
			// Pinned: one dispatcher at a time reads IN, so a user's
			// messages are routed in the order they arrived; another takes
			// over when it stops pulling.
			Durable:        contract.ConsumerDispatcher,
			Description:    "dispatcher: route each inbound message",
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        30 * time.Second,
			MaxAckPending:  1000,
			PriorityPolicy: jetstream.PriorityPolicyPinned,
			PriorityGroups: []string{contract.PriorityGroup},
			PinnedTTL:      contract.PinnedTTL,
		}},
		contract.StreamEvents: {{
			Durable:        contract.ConsumerDispatcherDone,
			Description:    "dispatcher: start a user's next message when a run ends; wait for the person when the agent asks",
			FilterSubjects: []string{contract.AllEvents(contract.KindDone), contract.AllEvents(contract.KindQuestion)},
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        30 * time.Second,
			MaxAckPending:  1000,
		}},
		contract.StreamTimers: {{
			Durable:        contract.ConsumerTimers,
			Description:    "dispatcher: end approvals and permission questions nobody answered; run scheduled messages",
			FilterSubjects: []string{contract.SubjectTimer + ".*.*.expired", contract.SubjectTimer + ".*.*.run"},
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        30 * time.Second,
			PriorityPolicy: jetstream.PriorityPolicyPinned,
			PriorityGroups: []string{contract.PriorityGroup},
			PinnedTTL:      contract.PinnedTTL,
		}},
		contract.StreamJobs: {{
			Durable:       contract.ConsumerRunner,
			Description:   "runner: run each job",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       contract.JobAckWait,
			MaxAckPending: 1000,
		}},
	}
}

// EgressConsumer is the durable consumer of one channel's events,
// egress-<channel>. A built-in channel's (egress's own) filters the kinds
// egress acts on (EgressKinds), so that a message's state events are not
// delivered for nothing. A plug-in channel's filters every event of its
// people with one filter (ts.ev.<channel>.>), which nats.go puts in the
// create request's subject
// ($JS.API.CONSUMER.CREATE.EVENTS.egress-<channel>.ts.ev.<channel>.>): its
// NATS user is allowed that subject alone, where a filter in the body only
// could re-filter its durable to every channel's events. The kinds it
// does not act on are acknowledged as they come.
func EgressConsumer(channel string) jetstream.ConsumerConfig {
	c := jetstream.ConsumerConfig{
		Durable:       "egress-" + channel,
		Description:   "egress: deliver " + channel + " users' events",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       contract.EgressAckWait,
		MaxAckPending: 1000,
	}
	if !contract.IsBuiltIn(channel) {
		c.FilterSubject = contract.ChannelEvents(channel)
		return c
	}
	for _, k := range EgressKinds {
		c.FilterSubjects = append(c.FilterSubjects, contract.SubjectEv+"."+channel+".*."+string(k))
	}
	return c
}

// EgressKinds are the events a channel's egress acts on; the others
// (state, image, steer, undelivered) a built-in channel's consumer is not
// delivered.
var EgressKinds = []contract.EventKind{contract.KindNotice, contract.KindProgress, contract.KindDone, contract.KindMore, contract.KindQuestion,
	contract.KindStarted, contract.KindAnswer, contract.KindWindow, contract.KindDelivery}

// Provision creates or updates every stream, consumer and bucket. It is
// idempotent: every service may call it at start.
func Provision(ctx context.Context, js jetstream.JetStream, o Options) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	for _, cfg := range Streams(o) {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("provision stream %s: %w", cfg.Name, err)
		}
	}
	for stream, cfgs := range Consumers() {
		for _, cfg := range cfgs {
			if _, err := js.CreateOrUpdateConsumer(ctx, stream, cfg); err != nil {
				return fmt.Errorf("provision consumer %s on %s: %w", cfg.Durable, stream, err)
			}
		}
	}
	for _, ch := range o.Channels {
		if !contract.IsToken(ch) {
			return fmt.Errorf("provision the stores of channel %q: %w", ch, contract.ErrInvalidUser)
		}
	}
	kvs, stores := Buckets(o)
	for _, cfg := range kvs {
		if _, err := js.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
			return fmt.Errorf("provision bucket %s: %w", cfg.Bucket, err)
		}
	}
	for _, cfg := range stores {
		if _, err := js.CreateOrUpdateObjectStore(ctx, cfg); err != nil {
			return fmt.Errorf("provision object store %s: %w", cfg.Bucket, err)
		}
	}
	return nil
}

// IsPermanent reports whether err means a message can never be processed,
// so a consumer should terminate it rather than ask for redelivery.
func IsPermanent(err error) bool {
	return errors.Is(err, contract.ErrInvalidPayload) || errors.Is(err, contract.ErrVersion) || errors.Is(err, contract.ErrInvalidUser)
}

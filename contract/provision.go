package contract

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Streams, consumers and buckets.
const (
	StreamIn     = "IN"
	StreamJobs   = "JOBS"
	StreamQueue  = "QUEUE"
	StreamEvents = "EVENTS"
	StreamTimers = "TIMERS"

	ConsumerDispatcher     = "dispatcher"        // IN: every inbound message
	ConsumerDispatcherDone = "dispatcher-done"   // EVENTS: done events (start the next job) and questions
	ConsumerRunner         = "runner"            // JOBS: every job
	ConsumerTimers         = "dispatcher-timers" // TIMERS: timeouts that fired, scheduled messages

	BucketUsers      = "users"      // KV: UserState per User.Key
	BucketEgress     = "egress"     // KV: what egress sent, and the pages still to send
	BucketRunners    = "runners"    // KV: runners alive, by runner id, expiring
	BucketWorkspaces = "workspaces" // KV: the runner holding each user's workspace
	BucketCosts      = "costs"      // KV: what runs cost, per person and day or month, and for the deployment

	// PriorityGroup is the pull group of pinned consumers.
	PriorityGroup = "active"
	BucketMedia   = "media" // object store: images, expiring
)

// Defaults: the limits and timeouts a deployment has unless its
// configuration says otherwise.
const (
	// QueueLimit is how many messages may wait behind a user's running one.
	QueueLimit = 5
	// DedupWindow is how long JetStream remembers a Nats-Msg-Id.
	DedupWindow = 10 * time.Minute
	// MediaTTL is how long an image stays retrievable.
	MediaTTL = 30 * time.Minute
	// MediaKeep is how many images the media store keeps at most.
	MediaKeep = 100
	// EventsMaxAge is how long events stay in EVENTS (web chat history).
	EventsMaxAge = 24 * time.Hour
	// ApprovalTimeout ends an unanswered approval request.
	ApprovalTimeout = 30 * time.Minute
	// PermissionTimeout denies an unanswered permission question.
	PermissionTimeout = 10 * time.Minute
	// JobAckWait is how long the runner may go without a sign of life
	// (it sends one every third of this) before a job is redelivered.
	JobAckWait = 15 * time.Second
	// EgressAckWait is how long egress may hold an event without a sign of
	// life before it is redelivered.
	EgressAckWait = 30 * time.Second
	// PinnedTTL is how long a pinned consumer's client may stop pulling
	// before another client is pinned.
	PinnedTTL = 5 * time.Second
	// RunnerTTL is how long a runner counts as alive after its last
	// heartbeat (it sends one every third of this); then another runner
	// may take over its users.
	RunnerTTL = 15 * time.Second
)

// Byte limits of the streams and buckets, sized for a laptop: together
// under 2 GB of disk. The work queues (IN, JOBS) and QUEUE refuse a new
// message when full rather than drop one they accepted (ingress then
// answers the provider with an error, and the provider retries); EVENTS and
// the egress bucket are history, whose oldest entries go first; TIMERS
// holds one timer per user and must discard old (the server's rule for
// message schedules).
const (
	// MaxMsgBytes is the largest message a stream takes: an event's text
	// is cut at MaxEventText, well under it.
	MaxMsgBytes    = 1 << 20
	InMaxBytes     = 256 << 20
	JobsMaxBytes   = 64 << 20
	QueueMaxBytes  = 64 << 20
	TimersMaxBytes = 16 << 20
	EventsMaxBytes = 512 << 20
	UsersMaxBytes  = 64 << 20
	EgressMaxBytes = 256 << 20
	// SmallMaxBytes bounds the runners' heartbeats and the workspaces map.
	SmallMaxBytes = 16 << 20
	// MediaMaxBytes holds MediaKeep images of a few MB each.
	MediaMaxBytes = 512 << 20
	// ChannelMediaMaxBytes bounds each plug-in channel's own media store
	// (ChannelMediaBucket): a few dozen images and files at once.
	ChannelMediaMaxBytes = 128 << 20
	// ChannelEgressMaxBytes bounds each plug-in channel's own egress
	// bucket (EgressBucketOf).
	ChannelEgressMaxBytes = 64 << 20
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
			Name:        StreamIn,
			Description: "inbound messages from every channel, one subject per user",
			Subjects:    []string{subjectIn + ".>"},
			Retention:   jetstream.WorkQueuePolicy,
			Duplicates:  DedupWindow,
			MaxAge:      7 * 24 * time.Hour,
			Storage:     jetstream.FileStorage,
			Replicas:    o.Replicas,
			MaxBytes:    InMaxBytes,
			MaxMsgSize:  MaxMsgBytes,
			Discard:     jetstream.DiscardNew,
		},
		{
			Name:        StreamJobs,
			Description: "messages cleared to run now, at most one per user",
			Subjects:    []string{subjectJob + ".>"},
			Retention:   jetstream.WorkQueuePolicy,
			Duplicates:  DedupWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    o.Replicas,
			MaxBytes:    JobsMaxBytes,
			MaxMsgSize:  MaxMsgBytes,
			Discard:     jetstream.DiscardNew,
		},
		{
			// The per-user queue is the broker's per-subject limit: the
			// (QueueLimit+1)th waiting message is refused by the server.
			Name:                 StreamQueue,
			Description:          "messages waiting for their user's current run to end",
			Subjects:             []string{subjectQueue + ".>"},
			Retention:            jetstream.LimitsPolicy,
			MaxMsgsPerSubject:    QueueLimit,
			Discard:              jetstream.DiscardNew,
			DiscardNewPerSubject: true,
			Duplicates:           DedupWindow,
			AllowDirect:          true,
			Storage:              jetstream.FileStorage,
			Replicas:             o.Replicas,
			MaxBytes:             QueueMaxBytes,
			MaxMsgSize:           MaxMsgBytes,
		},
		{
			// One pending schedule per user and subject: a new one replaces
			// the old, a purge cancels it.
			Name:              StreamTimers,
			Description:       "approval timeouts as message schedules, and their firings",
			Subjects:          []string{subjectTimer + ".>"},
			Retention:         jetstream.LimitsPolicy,
			MaxMsgsPerSubject: 1,
			AllowMsgSchedules: true,
			Duplicates:        DedupWindow,
			Storage:           jetstream.FileStorage,
			Replicas:          o.Replicas,
			// One timer per user: 16 MB holds tens of thousands. The server
			// allows message schedules only with discard old.
			MaxBytes:   TimersMaxBytes,
			MaxMsgSize: MaxMsgBytes,
		},
		{
			Name:        StreamEvents,
			Description: "everything that happens to a user's messages, for egress and taps",
			Subjects:    []string{subjectEv + ".>"},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      EventsMaxAge,
			Duplicates:  DedupWindow,
			Storage:     jetstream.FileStorage,
			Replicas:    o.Replicas,
			MaxBytes:    EventsMaxBytes,
			MaxMsgSize:  MaxMsgBytes,
		},
	}
}

// Consumers returns the durable consumers every deployment has, by stream.
// Channel egress consumers are made by EgressConsumer when a channel starts.
func Consumers() map[string][]jetstream.ConsumerConfig {
	return map[string][]jetstream.ConsumerConfig{
		StreamIn: {{
			// Pinned: one dispatcher at a time reads IN, so a user's
			// messages are routed in the order they arrived; another takes
			// over when it stops pulling.
			Durable:        ConsumerDispatcher,
			Description:    "dispatcher: route each inbound message",
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        30 * time.Second,
			MaxAckPending:  1000,
			PriorityPolicy: jetstream.PriorityPolicyPinned,
			PriorityGroups: []string{PriorityGroup},
			PinnedTTL:      PinnedTTL,
		}},
		StreamEvents: {{
			Durable:        ConsumerDispatcherDone,
			Description:    "dispatcher: start a user's next message when a run ends; wait for the person when the agent asks",
			FilterSubjects: []string{AllEvents(KindDone), AllEvents(KindQuestion)},
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        30 * time.Second,
			MaxAckPending:  1000,
		}},
		StreamTimers: {{
			Durable:        ConsumerTimers,
			Description:    "dispatcher: end approvals and permission questions nobody answered; run scheduled messages",
			FilterSubjects: []string{subjectTimer + ".*.*.expired", subjectTimer + ".*.*.run"},
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        30 * time.Second,
			PriorityPolicy: jetstream.PriorityPolicyPinned,
			PriorityGroups: []string{PriorityGroup},
			PinnedTTL:      PinnedTTL,
		}},
		StreamJobs: {{
			Durable:       ConsumerRunner,
			Description:   "runner: run each job",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       JobAckWait,
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
		AckWait:       EgressAckWait,
		MaxAckPending: 1000,
	}
	if !IsBuiltIn(channel) {
		c.FilterSubject = ChannelEvents(channel)
		return c
	}
	for _, k := range EgressKinds {
		c.FilterSubjects = append(c.FilterSubjects, subjectEv+"."+channel+".*."+string(k))
	}
	return c
}

// EgressKinds are the events a channel's egress acts on; the others
// (state, image, steer, undelivered) a built-in channel's consumer is not
// delivered.
var EgressKinds = []EventKind{KindNotice, KindProgress, KindDone, KindMore, KindQuestion,
	KindStarted, KindAnswer, KindWindow, KindDelivery}

// UsersBucket is the dispatcher's per-user state.
func UsersBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketUsers,
		Description: "dispatcher state per user",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    UsersMaxBytes,
	}
}

// EgressBucket remembers, per channel message, what egress already sent
// (so a redelivered event is not sent twice) and the pages of long replies
// still to send; entries expire with the events they are about.
func EgressBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketEgress,
		Description: "egress: sent marks and pending pages",
		History:     1,
		TTL:         EventsMaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    EgressMaxBytes,
	}
}

// EgressBucketOf is the bucket a channel's sent marks and pages are kept
// in: egress for the built-in channels, egress-<channel> for a plug-in
// one (Options.Channels provisions it). A plug-in channel has its own
// because a bucket a login may use is one it may look up, and a look-up
// with a subjects filter lists its keys: in a shared bucket, everyone
// egress wrote to (sent.<channel>.<id>.…).
func EgressBucketOf(channel string) string {
	if IsBuiltIn(channel) {
		return BucketEgress
	}
	return BucketEgress + "-" + channel
}

// ChannelEgressBucket is the egress bucket of plug-in channel
// (EgressBucketOf): egress's, with a bound of its own.
func ChannelEgressBucket(o Options, channel string) jetstream.KeyValueConfig {
	cfg := EgressBucket(o)
	cfg.Bucket = EgressBucketOf(channel)
	cfg.Description = "egress: sent marks and pending pages of the " + channel + " channel"
	cfg.MaxBytes = ChannelEgressMaxBytes
	return cfg
}

// RunnersBucket holds a key per runner alive: each runner writes its own
// every RunnerTTL/3, and a key not written for RunnerTTL expires.
func RunnersBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketRunners,
		Description: "runners alive (heartbeats)",
		History:     1,
		TTL:         RunnerTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    SmallMaxBytes,
	}
}

// WorkspacesBucket maps each user to the runner holding their workspace:
// that runner runs the user's jobs while it is alive.
func WorkspacesBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketWorkspaces,
		Description: "the runner holding each user's workspace",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    SmallMaxBytes,
	}
}

// CostsBucket holds what runs cost (Cost values): per person and day or
// month, for the whole deployment, and each person's last run. Entries of
// the past expire after CostsKept.
func CostsBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      BucketCosts,
		Description: "what runs cost, per person and for the deployment",
		History:     1,
		TTL:         CostsKept,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    SmallMaxBytes,
	}
}

// CostsKept is how long a cost entry lasts after its last change: past a
// month's end and a week's look back.
const CostsKept = 40 * 24 * time.Hour

// MediaBucket holds images; objects expire after the TTL.
func MediaBucket(o Options) jetstream.ObjectStoreConfig {
	o = o.withDefaults()
	return jetstream.ObjectStoreConfig{
		Bucket:      BucketMedia,
		Description: "images produced by runs, served by media",
		TTL:         o.MediaTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    MediaMaxBytes,
	}
}

// ChannelMediaBucket is the media store of plug-in channel (MediaBucketOf):
// media's lifetime, storage and replicas, a bound of its own. A plug-in
// channel's NATS login is allowed its own store alone: inside one bucket,
// permissions cannot tell one channel's objects from another's.
func ChannelMediaBucket(o Options, channel string) jetstream.ObjectStoreConfig {
	cfg := MediaBucket(o)
	cfg.Bucket = MediaBucketOf(channel)
	cfg.Description = "images and files of the " + channel + " channel's people"
	cfg.MaxBytes = ChannelMediaMaxBytes
	return cfg
}

func (o Options) withDefaults() Options {
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.MediaTTL <= 0 {
		o.MediaTTL = MediaTTL
	}
	return o
}

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
	buckets := []jetstream.KeyValueConfig{UsersBucket(o), EgressBucket(o), RunnersBucket(o), WorkspacesBucket(o), CostsBucket(o),
		PeopleBucket(o), PairingBucket(o), NotionBucket(o), ProjectsBucket(o), TelegramBucket(o)}
	stores := []jetstream.ObjectStoreConfig{MediaBucket(o), SnapshotsBucket(o)}
	for _, ch := range o.Channels {
		if !tokenRE.MatchString(ch) {
			return fmt.Errorf("provision the stores of channel %q: %w", ch, ErrInvalidUser)
		}
		if !IsBuiltIn(ch) {
			buckets = append(buckets, ChannelEgressBucket(o, ch))
			stores = append(stores, ChannelMediaBucket(o, ch))
		}
	}
	for _, cfg := range buckets {
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
	return errors.Is(err, ErrInvalidPayload) || errors.Is(err, ErrVersion) || errors.Is(err, ErrInvalidUser)
}

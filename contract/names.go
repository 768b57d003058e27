package contract

import "time"

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

// CostsKept is how long a cost entry lasts after its last change: past a
// month's end and a week's look back.
const CostsKept = 40 * 24 * time.Hour

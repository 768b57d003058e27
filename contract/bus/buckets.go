package bus

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// bucket is one key-value bucket or object store: what it holds, how
// long an entry lives (0: until replaced or deleted) and how big it may
// grow. Every bucket keeps one value per key, on file, in Options'
// replicas.
type bucket struct {
	name, about string
	ttl         time.Duration
	max         int64
	store       bool // an object store
}

// buckets is every bucket a deployment has, plug-in channels' own
// included.
func buckets(o Options) []bucket {
	bs := []bucket{
		{name: contract.BucketUsers, about: "dispatcher state per user", max: contract.UsersMaxBytes},
		// Per channel message, what egress already sent (a redelivered
		// event is not sent twice) and the pages of long replies still to
		// send; entries expire with the events they are about.
		{name: contract.BucketEgress, about: "egress: sent marks and pending pages", ttl: contract.EventsMaxAge, max: contract.EgressMaxBytes},
		// A key per runner alive: each writes its own every RunnerTTL/3.
		{name: contract.BucketRunners, about: "runners alive (heartbeats)", ttl: contract.RunnerTTL, max: contract.SmallMaxBytes},
		// The runner holding each user's workspace runs their jobs while
		// it is alive.
		{name: contract.BucketWorkspaces, about: "the runner holding each user's workspace", max: contract.SmallMaxBytes},
		// What runs cost (Cost values): per person and day or month, for
		// the deployment, and each person's last run.
		{name: contract.BucketCosts, about: "what runs cost, per person and for the deployment", ttl: contract.CostsKept, max: contract.SmallMaxBytes},
		{name: contract.BucketPeople, about: "people paired in with a code", max: contract.SmallMaxBytes},
		{name: contract.BucketPairing, about: "pairing codes and wrong tries", ttl: contract.PairingTTL, max: contract.SmallMaxBytes},
		// A page's entry outlives IN's deduplication window by far: a page
		// that no longer matches the filter is not looked at again, one
		// that does is recognised until a month unedited.
		{name: contract.BucketNotion, about: "notion: the version of each page that started a job", ttl: 30 * 24 * time.Hour, max: contract.SmallMaxBytes},
		{name: contract.BucketProjects, about: "runner: each person's projects", max: contract.SmallMaxBytes},
		// One small key, kept until the bot's updates no longer come by
		// polling.
		{name: contract.BucketTelegram, about: "telegram: where ingress is in the bot's updates, and which ingress polls", max: contract.SmallMaxBytes},
		{name: contract.BucketMedia, about: "images produced by runs, served by media", ttl: o.MediaTTL, max: contract.MediaMaxBytes, store: true},
		{name: contract.BucketSnapshots, about: "runner: the last snapshot of each person's projects, for the runner taking them over",
			ttl: contract.SnapshotsKept, max: contract.SnapshotsMaxBytes, store: true},
	}
	for _, ch := range o.Channels {
		if contract.IsBuiltIn(ch) {
			continue
		}
		// A plug-in channel's NATS login is allowed its own stores alone:
		// inside one bucket, permissions cannot tell one channel's keys
		// or objects from another's.
		bs = append(bs,
			bucket{name: contract.EgressBucketOf(ch), about: "egress: sent marks and pending pages of the " + ch + " channel",
				ttl: contract.EventsMaxAge, max: contract.ChannelEgressMaxBytes},
			bucket{name: contract.MediaBucketOf(ch), about: "images and files of the " + ch + " channel's people",
				ttl: o.MediaTTL, max: contract.ChannelMediaMaxBytes, store: true})
	}
	return bs
}

// Buckets are the configurations of every key-value bucket and object
// store Provision makes.
func Buckets(o Options) (kvs []jetstream.KeyValueConfig, stores []jetstream.ObjectStoreConfig) {
	o = o.withDefaults()
	for _, b := range buckets(o) {
		if b.store {
			stores = append(stores, jetstream.ObjectStoreConfig{Bucket: b.name, Description: b.about, TTL: b.ttl,
				Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxBytes: b.max})
			continue
		}
		kvs = append(kvs, jetstream.KeyValueConfig{Bucket: b.name, Description: b.about, History: 1, TTL: b.ttl,
			Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxBytes: b.max})
	}
	return kvs, stores
}

// KeyValueConfig is the configuration of the key-value bucket named so;
// ok is false for no such bucket.
func KeyValueConfig(o Options, name string) (cfg jetstream.KeyValueConfig, ok bool) {
	kvs, _ := Buckets(o)
	for _, c := range kvs {
		if c.Bucket == name {
			return c, true
		}
	}
	return cfg, false
}

func (o Options) withDefaults() Options {
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.MediaTTL <= 0 {
		o.MediaTTL = contract.MediaTTL
	}
	return o
}

package bus

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// PeopleBucket holds the people paired in.
func PeopleBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{Bucket: contract.BucketPeople, Description: "people paired in with a code",
		History: 1, Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxBytes: contract.SmallMaxBytes}
}

// PairingBucket holds pending codes and wrong tries; both expire.
func PairingBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{Bucket: contract.BucketPairing, Description: "pairing codes and wrong tries",
		History: 1, TTL: contract.PairingTTL, Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxBytes: contract.SmallMaxBytes}
}

// ProjectsBucket is BucketProjects' configuration.
func ProjectsBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      contract.BucketProjects,
		Description: "runner: each person's projects",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    contract.SmallMaxBytes,
	}
}

// SnapshotsBucket is BucketSnapshots' configuration.
func SnapshotsBucket(o Options) jetstream.ObjectStoreConfig {
	o = o.withDefaults()
	return jetstream.ObjectStoreConfig{
		Bucket:      contract.BucketSnapshots,
		Description: "runner: the last snapshot of each person's projects, for the runner taking them over",
		TTL:         contract.SnapshotsKept,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    contract.SnapshotsMaxBytes,
	}
}

// NotionBucket is BucketNotion's configuration. A page's entry outlives
// the deduplication window of IN by far: a page that no longer matches
// the filter is not looked at again, and one that does is recognised
// until its entry expires after a month unedited.
func NotionBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      contract.BucketNotion,
		Description: "notion: the version of each page that started a job",
		History:     1,
		TTL:         30 * 24 * time.Hour,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    contract.SmallMaxBytes,
	}
}

// TelegramBucket is BucketTelegram's configuration: one small key, kept
// until the bot's updates no longer come by polling.
func TelegramBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{
		Bucket:      contract.BucketTelegram,
		Description: "telegram: where ingress is in the bot's updates, and which ingress polls",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxBytes:    contract.SmallMaxBytes,
	}
}

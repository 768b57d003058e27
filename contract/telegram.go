package contract

import (
	"time"
)

// Telegram's updates, when ingress polls for them (getUpdates: no public
// URL) rather than taking them at a webhook: where it is in the bot's
// updates, and which ingress polls, in one key written by compare-and-set.
const (
	// BucketTelegram holds TelegramUpdatesKey.
	BucketTelegram = "telegram"
	// TelegramUpdatesKey is the key of the TelegramPoll.
	TelegramUpdatesKey = "updates"
)

// TelegramPoll is where ingress is in the bot's updates, and who polls.
// An ingress polls only while it holds the lease (Poller, until Until),
// which it renews before each getUpdates by writing this key at its
// revision; the same write commits Offset, so that a second ingress never
// polls beside it (Telegram would refuse one of the two) and a restart
// starts where the last poll left off.
type TelegramPoll struct {
	V int `json:"v"`
	// Offset is the next update_id to ask for: every update before it is
	// in IN (a crash after a publish and before this write publishes the
	// update again, and IN drops it by its Nats-Msg-Id).
	Offset int64 `json:"offset"`
	// Poller is the ingress holding the lease; empty when released.
	Poller string `json:"poller,omitempty"`
	// Until is when the lease ends unless renewed; another ingress may
	// take it after that.
	Until time.Time `json:"until,omitzero"`
}

func (p *TelegramPoll) setVersion() { p.V = Version }

func (p *TelegramPoll) version() int { return p.V }

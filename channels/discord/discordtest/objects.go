package discordtest

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"
)

// The objects below are Discord's, as the developer reference
// (discord.com/developers/docs/resources/message, …/interactions/receiving-and-responding)
// spells them in JSON: only the fields textslash's channel reads or sends.

// User is a Discord user.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Bot      bool   `json:"bot,omitempty"`
}

// Attachment is a file on a message.
type Attachment struct {
	ID          string  `json:"id"`
	Filename    string  `json:"filename"`
	ContentType string  `json:"content_type,omitempty"`
	Size        int     `json:"size"`
	URL         string  `json:"url"`
	ProxyURL    string  `json:"proxy_url"`
	Duration    float64 `json:"duration_secs,omitempty"`
	Waveform    string  `json:"waveform,omitempty"`
}

// Component is a message component: an action row (type 1) holding
// buttons (type 2).
type Component struct {
	Type       int         `json:"type"`
	Components []Component `json:"components,omitempty"`
	Style      int         `json:"style,omitempty"`
	Label      string      `json:"label,omitempty"`
	CustomID   string      `json:"custom_id,omitempty"`
	URL        string      `json:"url,omitempty"`
	Disabled   bool        `json:"disabled,omitempty"`
}

// Component types and message flags: a voice message's, and
// SUPPRESS_EMBEDS (no embeds of the content's links, which Discord would
// otherwise fetch to make).
const (
	ComponentActionRow = 1
	ComponentButton    = 2
	FlagSuppressEmbeds = 1 << 2
	FlagVoiceMessage   = 1 << 13
)

// Flags a bot may set: SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS and
// IS_VOICE_MESSAGE on a message it creates, SUPPRESS_EMBEDS alone on an
// edit; Discord ignores the others.
const (
	createFlags = FlagSuppressEmbeds | 1<<12 | FlagVoiceMessage
	editFlags   = FlagSuppressEmbeds
)

// AllowedMentions is who a sent message may ping.
type AllowedMentions struct {
	Parse []string `json:"parse"`
}

// Message is a message in a channel.
type Message struct {
	ID              string           `json:"id"`
	ChannelID       string           `json:"channel_id"`
	GuildID         string           `json:"guild_id,omitempty"`
	Author          User             `json:"author"`
	Content         string           `json:"content"`
	Timestamp       string           `json:"timestamp"`
	EditedTimestamp *string          `json:"edited_timestamp"`
	Type            int              `json:"type"`
	Mentions        []User           `json:"mentions"`
	Attachments     []Attachment     `json:"attachments"`
	Components      []Component      `json:"components"`
	Flags           int              `json:"flags,omitempty"`
	Nonce           string           `json:"nonce,omitempty"`
	AllowedMentions *AllowedMentions `json:"-"`
}

// Channel kinds (the channel object's type).
const (
	GuildText = 0
	DM        = 1
)

// Channel is a channel as POST /users/@me/channels answers.
type Channel struct {
	ID         string `json:"id"`
	Type       int    `json:"type"`
	GuildID    string `json:"guild_id,omitempty"`
	Recipients []User `json:"recipients,omitempty"`
}

// Interaction is an INTERACTION_CREATE's payload for a message component.
type Interaction struct {
	ID            string          `json:"id"`
	ApplicationID string          `json:"application_id"`
	Type          int             `json:"type"`
	Data          json.RawMessage `json:"data"`
	GuildID       string          `json:"guild_id,omitempty"`
	ChannelID     string          `json:"channel_id"`
	Member        *struct {
		User User `json:"user"`
	} `json:"member,omitempty"`
	User    *User    `json:"user,omitempty"`
	Message *Message `json:"message"`
	Token   string   `json:"token"`
	Version int      `json:"version"`
}

// discordEpoch is the first millisecond of 2015, where snowflakes start.
const discordEpoch = 1420070400000

var snowflakeSeq atomic.Int64

// snowflake is a new id made at t: its milliseconds since Discord's
// epoch above 22 bits of increment, as Discord's ids are.
func snowflake(t time.Time) string {
	ms := t.UnixMilli() - discordEpoch
	return strconv.FormatInt(ms<<22|(snowflakeSeq.Add(1)&0x3fffff), 10)
}

// apiError is Discord's JSON error body.
type apiError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Errors  json.RawMessage `json:"errors,omitempty"`
}

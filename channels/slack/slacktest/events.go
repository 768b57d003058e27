package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Message is a person's message as Slack delivers it in an event.
type Message struct {
	User    string
	Channel string
	// ChannelType is "im" for a direct message; "channel" (the default)
	// otherwise.
	ChannelType string
	Text        string
	TS          string
	ThreadTS    string
	// Mention: the bot was mentioned (an app_mention event), rather than
	// written to.
	Mention bool
	Files   []SharedFile
	// Subtype and BotID, as Slack sets them for messages of bots and
	// edits.
	Subtype string
	BotID   string
}

// SharedFile is a file a person shared with a message (AddFile serves its
// bytes).
type SharedFile struct {
	ID       string
	Name     string
	Mimetype string
	// Clip: an audio clip recorded in Slack (subtype "slack_audio",
	// shown as audio).
	Clip       bool
	DurationMs int
	URL        string // url_private_download
}

// Event is m as the payload of an events_api envelope (and the body of an
// Events API request): an event_callback, event_id eventID.
func (m Message) Event(eventID string) []byte {
	ev := map[string]any{"type": "message", "user": m.User, "text": m.Text, "ts": m.TS, "event_ts": m.TS,
		"channel": m.Channel, "channel_type": m.ChannelType}
	if m.ChannelType == "" {
		ev["channel_type"] = "channel"
	}
	if m.Mention {
		ev["type"] = "app_mention"
		delete(ev, "channel_type")
	}
	if m.ThreadTS != "" {
		ev["thread_ts"] = m.ThreadTS
	}
	if m.Subtype != "" {
		ev["subtype"] = m.Subtype
	}
	if m.BotID != "" {
		ev["bot_id"] = m.BotID
	}
	if len(m.Files) > 0 {
		var files []map[string]any
		for _, f := range m.Files {
			file := map[string]any{"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.Mimetype,
				"duration_ms": f.DurationMs, "url_private": f.URL, "url_private_download": f.URL}
			if f.Clip {
				file["subtype"], file["media_display_type"] = "slack_audio", "audio"
			}
			files = append(files, file)
		}
		ev["files"] = files
		if !m.Mention && m.Subtype == "" {
			ev["subtype"] = "file_share"
		}
	}
	return mustJSON(map[string]any{"token": "verification-token-unused", "team_id": Team, "api_app_id": AppID,
		"type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(), "event": ev,
		"authorizations": []map[string]any{{"team_id": Team, "user_id": BotUser, "is_bot": true}}})
}

// Press is a person pressing a button of a bot's message.
type Press struct {
	User      string
	Channel   string
	MessageTS string
	// Text and Blocks are the message's, as the payload carries them.
	Text     string
	Blocks   json.RawMessage
	ActionID string
	Value    string
	ActionTS string
}

// Payload is p as a block_actions payload (of an interactive envelope,
// or the payload field of an interactivity request).
func (p Press) Payload() []byte {
	return mustJSON(map[string]any{"type": "block_actions", "team": map[string]any{"id": Team},
		"user": map[string]any{"id": p.User, "team_id": Team}, "api_app_id": AppID, "trigger_id": "trig-" + p.ActionTS,
		"container": map[string]any{"type": "message", "message_ts": p.MessageTS, "channel_id": p.Channel, "is_ephemeral": false},
		"channel":   map[string]any{"id": p.Channel},
		"message":   message(p),
		"actions": []map[string]any{{"type": "button", "action_id": p.ActionID, "block_id": "choices",
			"value": p.Value, "action_ts": p.ActionTS, "text": map[string]any{"type": "plain_text", "text": p.Value}}},
		"response_url": "https://hooks.slack.invalid/actions/fake"})
}

// message is the pressed message as the payload carries it.
func message(p Press) map[string]any {
	m := map[string]any{"type": "message", "ts": p.MessageTS, "text": p.Text, "bot_id": BotID, "user": BotUser}
	if p.Blocks != nil {
		m["blocks"] = p.Blocks
	}
	return m
}

// Sign signs an Events API request's body as Slack does with the app's
// signing secret: X-Slack-Request-Timestamp and X-Slack-Signature
// (v0=hex(HMAC-SHA256(secret, "v0:" + timestamp + ":" + body))).
func Sign(h http.Header, secret string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

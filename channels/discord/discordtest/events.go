package discordtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Dispatch sends an event (op 0) of type t with payload d on the
// gateway, numbered after the session's last: while the bot is
// disconnected it is kept for its RESUME. Its sequence number, or
// ErrNoSession.
func (s *Server) Dispatch(t string, d any) (int64, error) {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.session == "" {
		return 0, ErrNoSession
	}
	return g.dispatchLocked(t, d), nil
}

// Drop cuts the gateway connection as a network failure would, with no
// close frame: the session stays resumable.
func (s *Server) Drop() {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn != nil {
		g.conn.UnderlyingConn().Close()
		g.conn = nil
	}
}

// Connected reports whether a bot holds the session now.
func (s *Server) Connected() bool {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	return s.gw.conn != nil
}

// GatewayStats are counts of what bots did on the gateway.
type GatewayStats struct {
	Identifies, Resumes, Heartbeats int
	// Intents are the last IDENTIFY's.
	Intents int
}

// Gateway is what bots did on the gateway so far.
func (s *Server) Gateway() GatewayStats {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	return GatewayStats{Identifies: g.identifies, Resumes: g.resumes, Heartbeats: g.heartbeats, Intents: g.intents}
}

// UserMessage is a person's message m arriving in its channel: stored,
// then dispatched as MESSAGE_CREATE (as the bot's intents let it see it).
// The message as stored, with its new id.
func (s *Server) UserMessage(m Message) (Message, error) {
	now := time.Now()
	s.mu.Lock()
	ch, ok := s.channels[m.ChannelID]
	if !ok {
		s.mu.Unlock()
		return Message{}, fmt.Errorf("discordtest: unknown channel %s", m.ChannelID)
	}
	m.ID, m.GuildID, m.Timestamp = snowflake(now), ch.GuildID, now.UTC().Format(time.RFC3339Nano)
	if m.Mentions == nil {
		m.Mentions = []User{}
	}
	if m.Attachments == nil {
		m.Attachments = []Attachment{}
	}
	stored := m
	s.messages[m.ChannelID] = append(s.messages[m.ChannelID], &stored)
	s.mu.Unlock()
	return m, s.gw.message(m, ch.Type)
}

// Press is user pressing the button customID under the bot's message in
// channel: an INTERACTION_CREATE of a message component, to be answered
// at /interactions/{id}/{token}/callback. The interaction dispatched.
func (s *Server) Press(channel, message string, user User, customID string) (Interaction, error) {
	s.mu.Lock()
	ch, ok := s.channels[channel]
	m := s.findLocked(channel, message)
	if !ok || m == nil {
		s.mu.Unlock()
		return Interaction{}, fmt.Errorf("discordtest: no message %s in channel %s", message, channel)
	}
	tok := make([]byte, 24)
	rand.Read(tok)
	data, _ := json.Marshal(map[string]any{"custom_id": customID, "component_type": ComponentButton})
	in := Interaction{ID: snowflake(time.Now()), ApplicationID: s.AppID, Type: 3, Data: data, ChannelID: channel,
		GuildID: ch.GuildID, Message: new(*m), Token: "aW50ZXJhY3Rpb24" + hex.EncodeToString(tok), Version: 1}
	if ch.GuildID != "" {
		in.Member = &struct {
			User User `json:"user"`
		}{User: user}
	} else {
		in.User = &user
	}
	s.interactions[in.ID] = &interactionState{interaction: in}
	s.mu.Unlock()
	_, err := s.Dispatch("INTERACTION_CREATE", in)
	return in, err
}

// Package discord is textslash's Discord channel: a bot that takes
// people's DMs, and the messages in servers that mention it, from
// Discord's gateway, and answers them through the REST API. Inbound, each
// message (its attachments as contract.Media, fetched later with Fetch)
// and each press of one of its buttons is handed to a Publish function
// (the channel kit's); outbound, *Discord is an egress.Sender (with
// Finder and Typer) the kit drives. It owns the Discord session and
// where each person is answered: in the channel they last wrote in, a DM
// until they have.
package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/bwmarrin/discordgo"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress"
)

// Publish stores one inbound message (the channel kit's Kit.Publish):
// deduplicated by the user and in.ID, nil once stored.
type Publish func(ctx context.Context, in contract.Inbound) error

// Discord is the channel: a bot on the gateway and a Sender.
type Discord struct {
	cfg     Config
	s       *discordgo.Session
	publish Publish
	log     zerolog.Logger
	// web downloads attachments and the media service's files.
	web *http.Client

	mu     sync.Mutex
	bot    string                   // the bot's user id, once known
	routes map[string]string        // user id → channel they last wrote in
	dms    map[string]string        // user id → DM channel
	status map[string]statusMessage // channel → the run's progress message
}

var (
	_ egress.Sender = (*Discord)(nil)
	_ egress.Finder = (*Discord)(nil)
	_ egress.Typer  = (*Discord)(nil)
)

// New returns the channel for cfg (defaulted and validated), handing what
// people send to publish. Nothing connects before Run; Send works
// without it.
func New(cfg Config, publish Publish, log zerolog.Logger) (*Discord, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if publish == nil {
		return nil, errors.New("discord: no publish function")
	}
	s, err := discordgo.New("Bot " + cfg.BotToken)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	api, _ := url.Parse(cfg.APIURL) // validated
	s.Client = &http.Client{Timeout: cfg.RequestTimeout, Transport: rehost{to: api, base: http.DefaultTransport}}
	s.Identify.Intents = Intents
	// egress owns retries (with backoff, dead letters): a 429 is returned
	// with its retry_after, a 502 as an error to retry.
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	// Events one at a time, in the gateway's order: a person's messages
	// are published in the order they wrote them.
	s.SyncEvents = true
	return &Discord{cfg: cfg, s: s, publish: publish, log: log.With().Str("channel", Channel).Logger(),
		web:    &http.Client{Timeout: cfg.RequestTimeout},
		routes: map[string]string{}, dms: map[string]string{}, status: map[string]statusMessage{}}, nil
}

// Name is the channel's name in contract.User.
func (d *Discord) Name() string { return Channel }

// Rules are Discord's limits on a message, for the kit's pusher.
func (d *Discord) Rules() egress.Rules { return d.cfg.Rules }

// Allowed are the Discord user ids that may use textslash.
func (d *Discord) Allowed() []string { return d.cfg.Allowed }

// Run connects to the gateway and hands each message and button press to
// publish until ctx ends. discordgo keeps the connection: after a drop it
// resumes the session, and Discord replays the events missed meanwhile.
// An error when the first connection fails (a bad token: close 4004).
func (d *Discord) Run(ctx context.Context) error {
	offs := []func(){
		d.s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) { d.ready(r) }),
		d.s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { d.onMessage(ctx, m) }),
		d.s.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) { d.onInteraction(ctx, ic) }),
		d.s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
			d.log.Warn().Msg("discord gateway disconnected; resuming")
		}),
		d.s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) { d.log.Info().Msg("discord gateway session resumed") }),
	}
	defer func() {
		for _, off := range offs {
			off()
		}
	}()
	if err := d.s.Open(); err != nil {
		return fmt.Errorf("discord gateway: %w", err)
	}
	<-ctx.Done()
	if err := d.s.Close(); err != nil {
		d.log.Warn().Err(err).Msg("discord gateway close")
	}
	return nil
}

// ready notes the bot's user id, which its mentions carry.
func (d *Discord) ready(r *discordgo.Ready) {
	if r.User == nil {
		return
	}
	d.mu.Lock()
	d.bot = r.User.ID
	d.mu.Unlock()
	d.log.Info().Str("bot_id", r.User.ID).Str("bot", r.User.Username).Msg("discord gateway ready")
}

// botID is the bot's user id: READY's, else asked of the API.
func (d *Discord) botID(ctx context.Context) (string, error) {
	d.mu.Lock()
	id := d.bot
	d.mu.Unlock()
	if id != "" {
		return id, nil
	}
	u, err := d.s.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	d.bot = u.ID
	d.mu.Unlock()
	return u.ID, nil
}

// rehost sends the requests discordgo makes to https://discord.com to
// Config.APIURL instead (discordgo's endpoints are package variables,
// fixed at init; its http.Client is the session's own).
type rehost struct {
	to   *url.URL
	base http.RoundTripper
}

func (t rehost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == "discord.com" && (t.to.Scheme != "https" || t.to.Host != "discord.com") {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.Host = t.to.Scheme, t.to.Host, t.to.Host
	}
	return t.base.RoundTrip(r)
}

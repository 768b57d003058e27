// Package discord is textslash's Discord channel, a plug-in channel on
// the channel port (channel/), run by the kit (kit/): a bot that takes
// people's DMs, and the messages in servers that mention it, from
// Discord's gateway, and answers them through the REST API. Inbound, each
// message (its attachments as contract.Media, fetched later with Fetch)
// and each press of one of its buttons is published with the Host Run is
// given (the allowlist, pairing and dedupe are the kit's); outbound,
// *Discord is the channel (a Finder and Typer too) whose Send the kit
// drives, uploading a reply's images and files as the kit read them. It
// owns the Discord session and where each person is answered: in the
// channel they last wrote in, a DM until they have.
package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/textslash/textslash/channel"

	"github.com/bwmarrin/discordgo"
	"github.com/rs/zerolog"
)

// Discord is the channel: a bot on the gateway and a Sender.
type Discord struct {
	cfg Config
	s   *discordgo.Session
	// host publishes what people send; set by Run, before the gateway
	// hands it anything.
	host channel.Host
	log  zerolog.Logger
	// web downloads people's attachments from Discord's CDN.
	web *http.Client

	places *channel.Places // where each person is answered, each channel's progress message

	mu  sync.Mutex
	bot string // the bot's user id, once known
}

var (
	_ channel.Sender = (*Discord)(nil)
	_ channel.Finder = (*Discord)(nil)
	_ channel.Typer  = (*Discord)(nil)

	_ channel.Channel = (*Discord)(nil)
	_ channel.Fetcher = (*Discord)(nil)
	_ channel.Retrier = (*Discord)(nil)
)

// New returns the channel for cfg (defaulted and validated): open the
// kit with it, then run the kit.
func New(cfg Config, log zerolog.Logger) (*Discord, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
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
	return &Discord{cfg: cfg, s: s, log: log.With().Str("channel", Channel).Logger(),
		web: &http.Client{Timeout: cfg.RequestTimeout}, places: channel.NewPlaces()}, nil
}

// Name is the channel's: discord.
func (d *Discord) Name() string { return Channel }

// Allowed are the Discord user ids allowed by the configuration.
func (d *Discord) Allowed() []string { return append([]string(nil), d.cfg.Allowed...) }

// Retry bounds the tries of a failed send (Config.Retry).
func (d *Discord) Retry() channel.Retry { return d.cfg.Retry }

// Rules are Discord's limits on a message, for the kit's pusher.
func (d *Discord) Rules() channel.Rules { return d.cfg.Rules }

// Run connects to the gateway until ctx ends, publishing each message
// and button press with h. discordgo keeps the connection: after a drop
// it resumes the session, and Discord replays the events missed
// meanwhile. An error when the first connection fails (a bad token:
// close 4004).
func (d *Discord) Run(ctx context.Context, h channel.Host) error {
	d.host = h
	return d.gateway(ctx)
}

// gateway hands each message and button press of the gateway to the host
// until ctx ends.
func (d *Discord) gateway(ctx context.Context) error {
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

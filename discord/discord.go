// Package discord is textslash's Discord channel, a plug-in channel on
// the channel kit (kit/): a bot that takes people's DMs, and the messages
// in servers that mention it, from Discord's gateway, and answers them
// through the REST API. Inbound, each message (its attachments as
// contract.Media, fetched later with Fetch) and each press of one of its
// buttons is published with the kit (Kit.Publish: the allowlist, pairing
// and dedupe are the kit's); outbound, *Discord is the egress.Sender
// (with Finder and Typer) the kit drives, uploading a reply's images and
// files read from the media store with Kit.Media. It owns the Discord
// session and where each person is answered: in the channel they last
// wrote in, a DM until they have. Serve runs it all against a NATS
// connection, as cmd/discord and the all-in-one do.
package discord

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/bwmarrin/discordgo"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/kit"
)

// Discord is the channel: a bot on the gateway and a Sender.
type Discord struct {
	cfg Config
	s   *discordgo.Session
	// k publishes what people send and reads a reply's media; set by Run
	// once the kit is open (the kit needs the Sender first).
	k   kit.Host
	log zerolog.Logger
	// web downloads people's attachments from Discord's CDN.
	web *http.Client

	places *kit.Places // where each person is answered, each channel's progress message

	mu  sync.Mutex
	bot string // the bot's user id, once known
}

var (
	_ egress.Sender = (*Discord)(nil)
	_ egress.Finder = (*Discord)(nil)
	_ egress.Typer  = (*Discord)(nil)
)

// New returns the channel for cfg (defaulted and validated). Open the
// kit with its Channel, then give it the kit with Use before Run or Send
// (Serve does all three).
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
		web: &http.Client{Timeout: cfg.RequestTimeout}, places: kit.NewPlaces()}, nil
}

// Channel is the channel as the kit runs it: Discord's rules, this
// Sender, the allowlist and Fetch for people's attachments. Replies'
// media come as the kit's stored:<id> links, read with Kit.Media.
func (d *Discord) Channel() kit.Channel {
	return kit.Channel{Name: Channel, Rules: d.cfg.Rules, Retry: d.cfg.Retry, Sender: d, Allowed: d.cfg.Allowed, Fetch: d.Fetch}
}

// Rules are Discord's limits on a message, for the kit's pusher.
func (d *Discord) Rules() egress.Rules { return d.cfg.Rules }

// Run runs the channel with k, the kit opened with its Channel, until
// ctx ends: it delivers textslash's messages (k.Run) and connects to the
// gateway, handing each message and button press to k. discordgo keeps
// the connection: after a drop it resumes the session, and Discord
// replays the events missed meanwhile. An error when the first connection
// fails (a bad token: close 4004), or the kit's.
func (d *Discord) Run(ctx context.Context, k kit.Host) error {
	d.k = k
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return k.Run(ctx) })
	g.Go(func() error { return d.gateway(ctx) })
	return g.Wait()
}

// gateway hands each message and button press of the gateway to the kit
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

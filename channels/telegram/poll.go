package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-telegram/bot"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// Receiving Telegram's updates. With an https public URL, Run sets the
// bot's webhook at start and Telegram posts each update to Routes.
// Without one, Run polls: getUpdates waits up to PollTimeout for updates,
// each is published as the webhook would (update), and only then is the
// offset past it committed to the telegram bucket (contract.TelegramPoll),
// so a restart neither loses an update nor publishes one twice: a crash
// between a publish and the commit asks for the update again, and IN
// drops it by its Nats-Msg-Id. The same key is the lease that lets one
// process at a time poll (Telegram ends one of two simultaneous polls
// with 409).

// updates are the updates textslash asks Telegram for.
var updates = []string{"message", "callback_query"}

// pollLeaseMargin is how much longer than a poll a poller's lease lasts.
const pollLeaseMargin = 10 * time.Second

// receive sets the webhook, or polls, until ctx ends, publishing with h.
func (t *Telegram) receive(ctx context.Context, h channel.Host) error {
	log, b, c := t.log, t.bot, t.cfg
	if c.webhook() {
		url := c.PublicURL + WebhookPath
		if retry(ctx, log, "telegram setWebhook", func(ctx context.Context) error {
			_, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: url, SecretToken: c.Secret, AllowedUpdates: updates})
			return t.clean(err)
		}) {
			log.Info().Str("url", url).Msg("telegram webhook set: Telegram posts the bot's updates there")
		}
		<-ctx.Done()
		return nil
	}
	// Telegram refuses getUpdates while a webhook is set.
	if !retry(ctx, log, "telegram deleteWebhook", func(ctx context.Context) error {
		_, err := b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
		return t.clean(err)
	}) {
		return nil
	}
	if t.leases == nil {
		return errors.New("telegram: polling needs the bucket of leases (Config.Leases)")
	}
	log.Info().Str("poller", c.Poller).Msg("telegram: polling for the bot's updates (no https PUBLIC_URL, none needed)")
	p := &poller{t: t, h: h, cfg: c, kv: t.leases, log: log,
		client: &http.Client{Timeout: c.PollTimeout + pollLeaseMargin}}
	return p.run(ctx)
}

// poller polls the bot's updates while it holds the lease.
type poller struct {
	t      *Telegram
	h      channel.Host
	cfg    Config
	kv     jetstream.KeyValue
	log    zerolog.Logger
	client *http.Client

	offset  int64  // the next update to ask for: those before it are in IN
	rev     uint64 // the key's revision as last written or read; 0: none yet
	held    bool   // the last write of the key was this poller's lease
	waiting bool   // standing by for another's lease, said once
}

// run polls until ctx ends, then releases the lease with the offset
// reached, so that a restart (or another ingress) goes on from there.
func (p *poller) run(ctx context.Context) error {
	defer p.release()
	var backoff time.Duration
	for ctx.Err() == nil {
		wait, err := p.claim(ctx)
		if err == nil && wait == 0 {
			err = p.poll(ctx)
		}
		switch {
		case ctx.Err() != nil:
		case err != nil:
			backoff = min(max(2*backoff, time.Second), time.Minute)
			p.log.Warn().Err(err).Dur("retry_in", backoff).Msg("telegram poll failed")
			sleep(ctx, backoff)
		default:
			backoff = 0
			sleep(ctx, wait)
		}
	}
	return nil
}

// claim takes or renews the lease and commits the offset reached, in one
// write of the key at the revision last seen. When another ingress holds
// the lease it returns how long to wait before looking again.
func (p *poller) claim(ctx context.Context) (wait time.Duration, err error) {
	data, _ := contract.Encode(&contract.TelegramPoll{Offset: p.offset, Poller: p.cfg.Poller, Until: time.Now().Add(p.cfg.PollTimeout + pollLeaseMargin)})
	var rev uint64
	if p.rev == 0 {
		rev, err = p.kv.Create(ctx, contract.TelegramUpdatesKey, data)
	} else {
		rev, err = p.kv.Update(ctx, contract.TelegramUpdatesKey, data, p.rev)
	}
	if err == nil {
		p.rev, p.held = rev, true
		if p.waiting {
			p.log.Info().Int64("offset", p.offset).Msg("telegram: this ingress polls now")
			p.waiting = false
		}
		return 0, nil
	}
	// Written by someone else since: this ingress before a restart, one
	// that released the lease or let it lapse, or one polling now.
	p.held = false
	e, gerr := p.kv.Get(ctx, contract.TelegramUpdatesKey)
	if gerr != nil {
		return 0, fmt.Errorf("telegram offset: write: %w; read: %w", err, gerr)
	}
	var cur contract.TelegramPoll
	if err := contract.Decode(e.Value(), &cur); err != nil {
		return 0, fmt.Errorf("telegram offset: %w", err)
	}
	p.rev, p.offset = e.Revision(), cur.Offset
	if cur.Poller == "" || cur.Poller == p.cfg.Poller || !time.Now().Before(cur.Until) {
		return 0, nil // free: take it on the next claim
	}
	if !p.waiting {
		p.log.Info().Str("polling", cur.Poller).Msg("telegram: another ingress polls the bot's updates; standing by")
		p.waiting = true
	}
	return min(time.Until(cur.Until), time.Second), nil
}

// poll asks for the updates from the offset on, waiting up to PollTimeout
// for some, and publishes them in order; the offset moves past each one
// published. It stops at the first not stored, to ask for it again.
func (p *poller) poll(ctx context.Context) error {
	updates, err := p.getUpdates(ctx)
	if err != nil {
		return err
	}
	for _, raw := range updates {
		upd, err := parseUpdate(raw)
		if err != nil {
			var head struct {
				ID int64 `json:"update_id"`
			}
			_ = json.Unmarshal(raw, &head)
			p.log.Warn().Err(err).Int64("update_id", head.ID).Msg("telegram update unreadable; skipped")
			p.offset = max(p.offset, head.ID+1)
			continue
		}
		trace := contract.NewTrace("")
		if err := p.t.update(contract.WithTrace(ctx, trace), p.log.With().Str(contract.LogTrace, trace).Logger(), p.h, upd); err != nil {
			return err
		}
		p.offset = max(p.offset, upd.ID+1)
	}
	return nil
}

// getUpdates is one long poll of the Bot API. The client library's own
// loop confirms an update to Telegram before its handler has run, so this
// asks itself, with the offset committed.
func (p *poller) getUpdates(ctx context.Context) ([]json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"offset": p.offset, "timeout": int(p.cfg.PollTimeout / time.Second), "allowed_updates": updates})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.APIURL+"/bot"+p.cfg.BotToken+"/getUpdates", bytes.NewReader(body))
	if err != nil {
		return nil, p.t.clean(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, p.t.clean(err)
	}
	defer resp.Body.Close()
	var r struct {
		OK          bool              `json:"ok"`
		Result      []json.RawMessage `json:"result"`
		ErrorCode   int               `json:"error_code"`
		Description string            `json:"description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("getUpdates: %s: %w", resp.Status, err)
	}
	if !r.OK {
		return nil, fmt.Errorf("getUpdates: %d %s", r.ErrorCode, r.Description)
	}
	return r.Result, nil
}

// release gives the lease up, with the offset reached, when this poller
// holds it.
func (p *poller) release() {
	if !p.held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	data, _ := contract.Encode(&contract.TelegramPoll{Offset: p.offset})
	if _, err := p.kv.Update(ctx, contract.TelegramUpdatesKey, data, p.rev); err != nil {
		p.log.Warn().Err(err).Msg("telegram poll lease not released; another ingress takes over when it ends")
	}
}

// retry calls f until it succeeds, backing off, or ctx ends; false then.
func retry(ctx context.Context, log zerolog.Logger, what string, f func(context.Context) error) bool {
	var backoff time.Duration
	for {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := f(cctx)
		cancel()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		backoff = min(max(2*backoff, time.Second), time.Minute)
		log.Error().Err(err).Dur("retry_in", backoff).Msg(what + " failed")
		if !sleep(ctx, backoff) {
			return false
		}
	}
}

// sleep waits d or until ctx ends; false then.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

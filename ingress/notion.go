package ingress

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/notion"
)

// Notion turns the pages of a Notion database whose status property is
// Todo into messages of one person: a bug report filed in Notion runs in
// that person's workspace, and they follow it (and approve its changes)
// from their phone while egress mirrors the run onto the page.
type Notion struct {
	Client *notion.Client
	// Database is the database polled.
	Database string
	// User is the person whose messages the pages become.
	User contract.User
	// StatusProperty names the status (or select) property ("Status"),
	// and Todo the option that asks for work ("To do").
	StatusProperty, Todo string
	// Every is the time between two polls (default 30 s).
	Every time.Duration
}

// withDefaults is n with the time between polls set when left zero.
func (n Notion) withDefaults() Notion {
	if n.Every == 0 {
		n.Every = 30 * time.Second
	}
	return n
}

// validate refuses each bad setting of n, the missing ones all at once.
func (n Notion) validate() error {
	var errs []error
	if n.Client == nil {
		errs = append(errs, bad("Notion.Client", nil, "required for Notion: the client of its API"))
	}
	if n.Database == "" {
		errs = append(errs, bad("Notion.Database", nil, "required: the id of the database polled"))
	}
	if err := n.User.Validate(); err != nil {
		var user any
		if n.User != (contract.User{}) {
			user = n.User.Key()
		}
		e := bad("Notion.User", user, "want the person whose messages the pages become")
		e.Err = err
		errs = append(errs, e)
	}
	if n.StatusProperty == "" {
		errs = append(errs, bad("Notion.StatusProperty", nil, "must not be empty"))
	}
	if n.Todo == "" {
		errs = append(errs, bad("Notion.Todo", nil, "must not be empty"))
	}
	if n.Every < time.Second {
		errs = append(errs, bad("Notion.Every", n.Every, "must be at least 1s"))
	}
	return errors.Join(errs...)
}

// pollNotion polls the database until ctx ends. Each page starts one
// message per version of it (contract.NotionJobID: the page and its last
// edit), however many polls, restarts and ingress processes see it: the
// message's id deduplicates it in IN, and the notion bucket remembers the
// version started for longer than IN's window does. A page is published
// before it is remembered, so a crash between the two repeats a publish
// that IN drops, never loses one.
func (i *Ingress) pollNotion(ctx context.Context) error {
	n := *i.cfg.Notion
	log := i.log.With().Str("channel", "notion").Str("database", n.Database).Logger()
	kv, err := i.js.KeyValue(ctx, contract.BucketNotion)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketNotion, err)
	}
	p := &notionPoller{cfg: n, i: i, kv: kv, log: log}
	t := time.NewTicker(n.Every)
	defer t.Stop()
	for {
		if err := p.poll(ctx); err != nil && ctx.Err() == nil {
			log.Error().Err(err).Dur("next_poll_ms", n.Every).Msg("notion poll failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type notionPoller struct {
	cfg       Notion
	i         *Ingress
	kv        jetstream.KeyValue
	log       zerolog.Logger
	ds        string // the data source, once found
	prop, typ string // the status property's name and type
}

// poll starts every page that asks for work and has not started in this
// version.
func (p *notionPoller) poll(ctx context.Context) error {
	if p.ds == "" {
		if err := p.open(ctx); err != nil {
			return err
		}
	}
	pages, err := p.cfg.Client.Query(ctx, p.ds, p.prop, p.typ, p.cfg.Todo)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	started := 0
	for _, pg := range pages {
		ok, err := p.start(ctx, pg)
		if err != nil {
			return fmt.Errorf("page %s: %w", pg.ID, err)
		}
		if ok {
			started++
		}
	}
	p.log.Debug().Int("pages", len(pages)).Int("started", started).Msg("notion polled")
	return nil
}

// open finds the database's data source and checks its status property.
func (p *notionPoller) open(ctx context.Context) error {
	ds, err := p.cfg.Client.DataSource(ctx, p.cfg.Database)
	if err != nil {
		return fmt.Errorf("database (is it shared with the integration?): %w", err)
	}
	prop, ok := ds.Properties[p.cfg.StatusProperty]
	if !ok || prop.Type != "status" && prop.Type != "select" {
		return contract.BadSetting(service, "Notion.StatusProperty", p.cfg.StatusProperty,
			fmt.Sprintf("database %q has no status or select property of that name", ds.Title))
	}
	p.ds, p.prop, p.typ = ds.ID, prop.Name, prop.Type
	p.log.Info().Str("data_source", ds.ID).Str("title", ds.Title).Str("property", prop.Name).Str("type", prop.Type).
		Str("todo", p.cfg.Todo).Str("user", p.cfg.User.Key()).Msg("notion database found")
	return nil
}

// start publishes page pg as a message unless this version of it started
// before; it reports whether it published.
func (p *notionPoller) start(ctx context.Context, pg notion.Page) (bool, error) {
	task := contract.NotionTaskID(pg.ID)
	version := strconv.FormatInt(pg.LastEdited.UnixMilli(), 10)
	key := contract.NotionPageKey(task)
	if e, err := p.kv.Get(ctx, key); err == nil && string(e.Value()) == version {
		return false, nil
	} else if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, fmt.Errorf("notion bucket: %w", err)
	}
	body, err := p.cfg.Client.Text(ctx, pg.ID)
	if err != nil && !notion.Permanent(err) {
		return false, fmt.Errorf("read: %w", err)
	}
	if err != nil {
		p.log.Warn().Err(err).Str("page", task).Msg("notion page body unreadable; running its title alone")
	}
	in := contract.Inbound{ID: contract.NotionJobID(pg.ID, pg.LastEdited), User: p.cfg.User, Text: notionText(pg, body), At: time.Now().UTC()}
	ctx = contract.WithTrace(ctx, contract.NewTrace(""))
	// The person learns in their chat what the replies that follow are
	// about, before any of them. (Without the job's id: it is for the
	// chat, not the page.)
	tell := contract.NewNotice(p.cfg.User, "", "📋 A task from Notion: "+pg.Title+"\n"+pg.URL)
	if err := bus.PublishEvent(ctx, p.i.js, tell, contract.MsgID(p.cfg.User, in.ID, "notion")); err != nil {
		return false, err
	}
	if err := p.i.Publish(ctx, in); err != nil {
		return false, err
	}
	if _, err := p.kv.Put(ctx, key, []byte(version)); err != nil {
		return true, fmt.Errorf("notion bucket: %w", err)
	}
	p.log.Info().Str("page", task).Str("title", pg.Title).Str("job_id", in.ID).Str("user", p.cfg.User.Key()).Msg("notion task published")
	return true, nil
}

// notionText is the message a page becomes: its title and its text, as
// the person would have typed them (the shell agent runs them as they
// are; the page's link goes to the person, in the notice).
func notionText(pg notion.Page, body string) string {
	text := strings.TrimSpace(pg.Title)
	if body = strings.TrimSpace(body); body != "" {
		text += "\n\n" + body
	}
	return text
}

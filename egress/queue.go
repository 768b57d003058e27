package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress/internal/pages"
)

// A Sender delivers messages to the people of one channel (Twilio's
// WhatsApp and SMS today).
type Sender interface {
	// Send delivers one message and returns the provider's id for it.
	// Failures are *SendError.
	Send(ctx context.Context, u contract.User, m Message) (string, error)
}

// Message is one message as a channel sends it: text and image URLs
// (and file URLs, contract.MediaPath's /files/ links).
type Message struct {
	Body  string
	Media []string
	// Document: Media is one file, to be sent as a document (on channels
	// whose Rules keep DocumentsApart).
	Document bool `json:",omitempty"`
	// Progress: a line about the run in progress (JobID), which a channel
	// that can edit messages shows in one status message.
	Progress bool
	JobID    string
	// Choices are the replies that answer the message (a permission
	// question's yes / no / always, an approval's approve / reject): a
	// channel with buttons shows one per choice, whose press sends the
	// choice as the person's message. Channels without buttons ignore
	// them: the body says what to reply.
	Choices []string
	// Template, when set, is sent instead of Body and Media: an approved
	// template by the provider's id (Twilio's Content SID), which may go
	// out when free-form messages may not (window.go).
	Template string
}

// Finder is a Sender that can tell whether a message reached the provider:
// after a crash between a send and its record, egress asks it rather than
// sending again. Without one, such a message may go out twice.
type Finder interface {
	// Find returns the provider's id of a message like m to u created
	// since then, or "" when there is none.
	Find(ctx context.Context, u contract.User, m Message, since time.Time) (id string, err error)
}

// SendError is a failed send.
type SendError struct {
	Err error
	// Permanent: trying again cannot help (a validation error, a number
	// that cannot be reached).
	Permanent bool
	// Code and Status are the provider's error code and HTTP status.
	Code   int
	Status int
	// RetryAfter is the least wait the provider asked for before the
	// next try.
	RetryAfter time.Duration
}

func (e *SendError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("send: code %d: %v", e.Code, e.Err)
	}
	return "send: " + e.Err.Error()
}

func (e *SendError) Unwrap() error { return e.Err }

// Rules are what a channel allows in one message and how replies are cut.
type Rules struct {
	// BodyLimit is the most characters (UTF-16 code units) in one message.
	BodyLimit int
	// MaxMedia is the most images in one message; the first goes with the
	// text, the rest follow in messages of their own.
	MaxMedia int
	// MaxImageBytes: larger images are left out, with a note.
	MaxImageBytes int
	// MaxFileBytes: larger files (not images) are left out, with a note;
	// default MaxImageBytes.
	MaxFileBytes int
	// DocumentsApart: files go in messages of their own, one each
	// (Message.Document), after the images, never with them; the text
	// goes with the first of them when there is no image. Otherwise files
	// are media like images.
	DocumentsApart bool
	// CaptionLimit, when set, is the most characters that go with images
	// in one message; a longer text is sent on its own before them, and
	// an image's own caption (contract.Image.Caption) is cut to it (else
	// to BodyLimit).
	CaptionLimit int
	// Truncate cuts long replies at TruncateAt characters instead of paging
	// them ("Reply MORE").
	Truncate   bool
	TruncateAt int
	// ProgressEvery is the least time between two progress messages to one
	// person; in between, the latest progress waits and older ones are
	// dropped. Every event still travels on NATS.
	ProgressEvery time.Duration
	// TypingEvery, for a Sender that is a Typer, is how often the typing
	// indicator is shown again while a run works (zero: never shown).
	TypingEvery time.Duration
}

func (r Rules) withDefaults(d Rules) Rules {
	if r.BodyLimit <= 0 {
		r.BodyLimit = d.BodyLimit
	}
	if r.MaxMedia <= 0 {
		r.MaxMedia = d.MaxMedia
	}
	if r.MaxImageBytes <= 0 {
		r.MaxImageBytes = d.MaxImageBytes
	}
	if r.MaxFileBytes <= 0 {
		r.MaxFileBytes = d.MaxFileBytes
	}
	if r.MaxFileBytes <= 0 {
		r.MaxFileBytes = r.MaxImageBytes
	}
	if r.TruncateAt <= 0 || r.TruncateAt > r.BodyLimit {
		r.TruncateAt = min(1500, r.BodyLimit)
	}
	if r.ProgressEvery <= 0 {
		r.ProgressEvery = 10 * time.Second
	}
	return r
}

// Retry bounds the tries of a send that failed for a reason that may pass.
type Retry struct {
	Attempts int           // tries in all; default 6
	Base     time.Duration // first delay, doubled each time, with jitter; default 1s
	Max      time.Duration // longest delay; default 30s
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 6
	}
	if r.Base <= 0 {
		r.Base = time.Second
	}
	if r.Max <= 0 {
		r.Max = 30 * time.Second
	}
	return r
}

// delay before try n+1: exponential with full jitter in its upper half.
func (r Retry) delay(n int) time.Duration {
	d := r.Base << min(n-1, 20)
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	return d/2 + rand.N(d/2+1)
}

// Texts of paging.
const (
	MsgTruncated     = "\n\n[Response truncated]"
	MsgNoMore        = "There is nothing more: that was the whole reply."
	msgTooLarge      = "(%d image(s) too large for this channel were left out.)"
	msgFilesTooLarge = "(%d file(s) too large for this channel were left out.)"
)

// pageFooter ends each page of a long reply.
func pageFooter(i, n int) string {
	if i == n {
		return fmt.Sprintf("\n\n(page %d/%d)", i, n)
	}
	return fmt.Sprintf("\n\nReply MORE for the rest (page %d/%d)", i, n)
}

// compose cuts a reply into the messages a channel sends now, in order,
// and the pages left for "more". Captioned images go after the reply and
// its other images, one message each (captionedMessages).
func (r Rules) compose(text string, images []contract.Image, mediaURL func(contract.Image) string) (msgs []Message, rest []string) {
	images, captioned := r.captionedMessages(images, mediaURL)
	var urls, docs []string
	tooLarge, filesTooLarge := 0, 0
	for _, img := range images {
		switch {
		case contract.IsImage(img.ContentType) && img.Size > r.MaxImageBytes:
			tooLarge++
		case contract.IsImage(img.ContentType):
			urls = append(urls, mediaURL(img))
		case img.Size > r.MaxFileBytes:
			filesTooLarge++
		case r.DocumentsApart:
			docs = append(docs, mediaURL(img))
		default:
			urls = append(urls, mediaURL(img))
		}
	}
	if tooLarge > 0 {
		text += "\n\n" + fmt.Sprintf(msgTooLarge, tooLarge)
	}
	if filesTooLarge > 0 {
		text += "\n\n" + fmt.Sprintf(msgFilesTooLarge, filesTooLarge)
	}
	first := text
	switch {
	case pages.Length(text) <= r.BodyLimit:
	case r.Truncate:
		first = pages.Truncate(text, r.TruncateAt, MsgTruncated)
	default:
		ps, err := pages.Split(text, r.BodyLimit, pageFooter)
		if err != nil { // a limit too small for any footer: cut instead
			first = pages.Truncate(text, r.BodyLimit, "")
			break
		}
		first, rest = ps[0], ps[1:]
	}
	if r.CaptionLimit > 0 && len(urls)+len(docs) > 0 && pages.Length(first) > r.CaptionLimit {
		msgs = append(msgs, Message{Body: first})
		first = ""
	}
	msg := Message{Body: first}
	if len(urls) == 0 && len(docs) > 0 {
		msg.Media, msg.Document, docs = docs[:1], true, docs[1:]
	}
	n := min(len(urls), r.MaxMedia)
	if n > 0 {
		msg.Media, urls = urls[:n], urls[n:]
	}
	msgs = append(msgs, msg)
	for len(urls) > 0 {
		n := min(len(urls), r.MaxMedia)
		msgs = append(msgs, Message{Media: urls[:n]})
		urls = urls[n:]
	}
	msgs = append(msgs, captioned...)
	for _, d := range docs {
		msgs = append(msgs, Message{Media: []string{d}, Document: true})
	}
	return msgs, rest
}

// captionedMessages takes the captioned images the channel can send out
// of images: each is a message of its own, its caption the text, cut to
// the channel's caption limit (else its body limit). The rest go with the
// reply as before (an image too large is left there, to be counted out).
func (r Rules) captionedMessages(images []contract.Image, mediaURL func(contract.Image) string) (rest []contract.Image, msgs []Message) {
	limit := r.CaptionLimit
	if limit <= 0 {
		limit = r.BodyLimit
	}
	for _, img := range images {
		if img.Caption == "" || !contract.IsImage(img.ContentType) || img.Size > r.MaxImageBytes {
			rest = append(rest, img)
			continue
		}
		msgs = append(msgs, Message{Body: pages.Truncate(img.Caption, limit, "…"), Media: []string{mediaURL(img)}})
	}
	return rest, msgs
}

// pagesLeft is what the egress bucket keeps of a user's last long reply.
type pagesLeft struct {
	JobID string   `json:"job_id"`
	Pages []string `json:"pages"`
	// MoreSeq is the EVENTS sequence of the "more" that took the last
	// page, so a redelivered "more" does not take another.
	MoreSeq uint64 `json:"more_seq,omitempty"`
}

// pusher delivers one or more channels' events through Senders: per user
// in order, one event at a time, each message once.
type pusher struct {
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	log   zerolog.Logger
	retry Retry
	sent  *sentWaiter // nil: do not wait for delivery status

	channels map[string]channel
	typing   typing
	// people paired in (contract.Pairing) may be answered too.
	people  *contract.People
	pairing *contract.Pairing

	mu    sync.Mutex
	users map[string]*userQueue // by user key
	// noPages are the people known to have no pages left (pagesKey):
	// egress alone writes them, so a short reply need not clear them.
	noPages map[string]bool
}

type channel struct {
	rules  Rules
	sender Sender
	// mediaURL is the link to an image that the channel's messages carry.
	mediaURL func(contract.Image) string
	// waitSent: the provider reports delivery status (Twilio), and a
	// user's next message waits for "sent".
	waitSent bool
	// allowed are the user ids the channel may send to (the allowlist
	// ingress admits by): EVENTS can be written by more than textslash's
	// own services, and a send costs the operator money and reputation.
	allowed map[string]bool
	// window, when set, is the channel's reply window: messages refused
	// outside it are held until the person writes again (window.go).
	window *window
}

// item is one event in a user's queue.
type item struct {
	msg jetstream.Msg
	ev  contract.Event
	seq uint64
}

type userQueue struct {
	items []item // waiting, oldest first; guarded by pusher.mu
	wake  chan struct{}
	busy  map[uint64]bool // sequences queued or being handled
}

// run consumes every channel's events until ctx ends.
func (p *pusher) run(ctx context.Context) error {
	var err error
	if p.pairing, err = contract.OpenPairing(ctx, p.js); err != nil {
		return err
	}
	if p.people, err = contract.WatchPeople(ctx, p.js); err != nil {
		return err
	}
	ccs := make([]jetstream.ConsumeContext, 0, len(p.channels))
	defer func() {
		for _, cc := range ccs {
			cc.Stop()
		}
	}()
	for name := range p.channels {
		cons, err := p.js.CreateOrUpdateConsumer(ctx, contract.StreamEvents, contract.EgressConsumer(name))
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting
			}
			return fmt.Errorf("egress consumer %s: %w", name, err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { p.route(ctx, m) },
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				if ctx.Err() == nil {
					p.log.Warn().Err(err).Str("channel", name).Msg("consume")
				}
			}))
		if err != nil {
			return fmt.Errorf("egress consume %s: %w", name, err)
		}
		ccs = append(ccs, cc)
	}
	heartbeat := time.NewTicker(contract.EgressAckWait / 3)
	defer heartbeat.Stop()
	refresh := time.NewTicker(time.Hour)
	defer refresh.Stop()
	p.refreshHeld(ctx, heldRefresh)
	for {
		select {
		case <-ctx.Done():
			p.handBack()
			return nil
		case <-heartbeat.C:
			p.keepAlive()
		case <-refresh.C:
			p.refreshHeld(ctx, heldRefresh)
		}
	}
}

// route files one event: delivery reports settle waits at once; events
// for the person join the user's queue; the rest is not for egress.
func (p *pusher) route(ctx context.Context, m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	var ev contract.Event
	if err := contract.Decode(m.Data(), &ev); err != nil {
		log := contract.TraceLog(p.log, contract.Trace(m.Headers()))
		log.Error().Err(err).Str("subject", m.Subject()).Msg("undecodable event terminated")
		_ = m.Term()
		return
	}
	switch ev.Kind {
	case contract.KindNotice, contract.KindProgress, contract.KindDone, contract.KindMore, contract.KindQuestion:
	case contract.KindStarted, contract.KindAnswer: // the typing indicator's cues
	case contract.KindWindow: // the person wrote: send what was held
	case contract.KindDelivery:
		if p.sent != nil {
			p.sent.report(ev.ProviderID, ev.Status, ev.Code)
		}
		_ = m.Ack()
		return
	default:
		_ = m.Ack()
		return
	}
	ch, ok := p.channels[ev.User.Channel]
	if !ok {
		_ = m.Ack()
		return
	}
	if !p.allowed(ctx, ch, ev.User) {
		log := contract.TraceLog(p.log, contract.Trace(m.Headers()))
		log.Error().Str("user", ev.User.Key()).Str("kind", string(ev.Kind)).Str("subject", m.Subject()).Uint64("seq", md.Sequence.Stream).
			Msg("event for a user not allowed dropped: nobody on the channel's allowlist (ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS) sent it; something else published it")
		refused.WithLabelValues(ev.User.Channel).Inc()
		_ = m.Ack()
		return
	}
	switch ev.Kind {
	case contract.KindStarted, contract.KindAnswer, contract.KindDone, contract.KindQuestion:
		p.typing.note(ctx, ch, ev)
	}
	if ev.Kind == contract.KindStarted || ev.Kind == contract.KindAnswer {
		_ = m.Ack()
		return
	}
	key := ev.User.Key()
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.users[key]
	if q == nil {
		q = &userQueue{wake: make(chan struct{}, 1), busy: map[uint64]bool{}}
		p.users[key] = q
		go p.work(ctx, ev.User, q)
	}
	if q.busy[md.Sequence.Stream] {
		return // a redelivery of an event already in hand
	}
	q.busy[md.Sequence.Stream] = true
	q.items = append(q.items, item{msg: m, ev: ev, seq: md.Sequence.Stream})
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// allowed reports whether u may be answered on ch: listed in the
// configuration, or paired in (the watched set, else the bucket itself:
// the watch may not have seen someone paired in a moment ago).
func (p *pusher) allowed(ctx context.Context, ch channel, u contract.User) bool {
	if ch.allowed[u.ID] || p.people.Has(u) {
		return true
	}
	ok, err := p.pairing.Has(ctx, u)
	if err != nil {
		p.log.Warn().Err(err).Str("user", u.Key()).Msg("people bucket")
	}
	return ok
}

// keepAlive tells JetStream that queued events are in hand, so it does not
// redeliver them while an earlier message of the same user is retried.
func (p *pusher) keepAlive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.users {
		for _, it := range q.items {
			_ = it.msg.InProgress()
		}
	}
}

// handBack returns queued events at shutdown, for the next egress.
func (p *pusher) handBack() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.users {
		for _, it := range q.items {
			_ = it.msg.Nak()
		}
		q.items = nil
	}
}

const userIdle = time.Minute

// work delivers one user's events in order. Progress is coalesced: at most
// one per Rules.ProgressEvery, the latest wins, and a reply makes any
// waiting progress moot.
func (p *pusher) work(ctx context.Context, u contract.User, q *userQueue) {
	ch := p.channels[u.Channel]
	log := p.log.With().Str("user", u.Key()).Logger()
	var (
		pending      *item // progress waiting for its turn
		lastProgress time.Time
		timer        = time.NewTimer(time.Hour)
	)
	timer.Stop()
	idle := time.NewTimer(userIdle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			if pending != nil {
				// Acknowledged when it was put aside: a failure here loses
				// one progress line, which the next one replaces anyway.
				ctx, log := contract.Traced(ctx, log, pending.msg.Headers())
				if err := p.send(ctx, log, ch, *pending); err != nil {
					log.Warn().Err(err).Msg("progress not sent")
				}
				lastProgress, pending = time.Now(), nil
			}
			continue
		case <-idle.C:
			p.mu.Lock()
			if len(q.items) == 0 && pending == nil {
				delete(p.users, u.Key())
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			idle.Reset(userIdle)
			continue
		case <-q.wake:
		}
		for {
			p.mu.Lock()
			if len(q.items) == 0 {
				p.mu.Unlock()
				break
			}
			it := q.items[0]
			q.items = q.items[1:]
			p.mu.Unlock()

			switch it.ev.Kind {
			case contract.KindProgress:
				if wait := ch.rules.ProgressEvery - time.Since(lastProgress); wait > 0 {
					_ = it.msg.Ack() // NATS has it; the person gets the latest
					if pending == nil {
						timer.Reset(wait)
					}
					pending = &it
				} else {
					p.deliver(ctx, log, ch, it)
					lastProgress = time.Now()
				}
			case contract.KindDone:
				if pending != nil {
					pending = nil
					timer.Stop()
				}
				p.deliver(ctx, log, ch, it)
			default:
				p.deliver(ctx, log, ch, it)
			}
			p.mu.Lock()
			delete(q.busy, it.seq)
			p.mu.Unlock()
		}
		idle.Reset(userIdle)
	}
}

// deliver sends one event and settles it. Settle puts the event's trace
// on the context and the logger it hands on, so the send's lines and a
// dead letter carry it.
func (p *pusher) deliver(ctx context.Context, log zerolog.Logger, ch channel, it item) {
	contract.Settle(ctx, it.msg, func(ctx context.Context, m jetstream.Msg) error {
		return p.send(ctx, *zerolog.Ctx(ctx), ch, it)
	}, log)
}

// errUndeliverable: the provider refused a message for good; the dead
// letter is published and the event is done with.
var errUndeliverable = errors.New("undeliverable")

func (p *pusher) send(ctx context.Context, log zerolog.Logger, ch channel, it item) error {
	ev, u := it.ev, it.ev.User
	var msgs []Message
	switch ev.Kind {
	case contract.KindDone:
		var rest []string
		msgs, rest = ch.rules.compose(ev.Text, ev.Images, ch.mediaURL)
		if len(rest) > 0 {
			p.setNoPages(u, false)
			data, _ := json.Marshal(pagesLeft{JobID: ev.JobID, Pages: rest})
			if _, err := p.kv.Put(ctx, pagesKey(u), data); err != nil {
				return fmt.Errorf("store pages: %w", err)
			}
		} else if !p.hasNoPages(u) {
			if err := p.kv.Delete(ctx, pagesKey(u)); err != nil {
				return fmt.Errorf("clear pages: %w", err)
			}
			p.setNoPages(u, true)
		}
		if len(msgs) > 0 {
			msgs[len(msgs)-1].Choices = ev.Choices
		}
	case contract.KindMore:
		return p.more(ctx, log, ch, it)
	case contract.KindWindow:
		return p.flush(ctx, log, ch, it)
	default:
		msgs = []Message{{Body: pages.Truncate(ev.Text, ch.rules.BodyLimit, "…"), Progress: ev.Kind == contract.KindProgress,
			JobID: ev.JobID, Choices: ev.Choices}}
	}
	for i, m := range msgs {
		if m.Body == "" && len(m.Media) == 0 {
			continue
		}
		if err := p.sendOnce(ctx, log, ch, it, i, m); err != nil {
			if errors.Is(err, errHeld) {
				continue // the parts behind it are held too
			}
			if errors.Is(err, errUndeliverable) {
				return nil
			}
			return err
		}
	}
	return nil
}

// more sends the next page of the user's last long reply.
func (p *pusher) more(ctx context.Context, log zerolog.Logger, ch channel, it item) error {
	u := it.ev.User
	entry, err := p.kv.Get(ctx, pagesKey(u))
	var left pagesLeft
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return fmt.Errorf("load pages: %w", err)
	default:
		if err := json.Unmarshal(entry.Value(), &left); err != nil {
			log.Warn().Err(err).Msg("pages unreadable; dropped")
		}
	}
	if left.MoreSeq == it.seq {
		return nil // this "more" took its page before a restart
	}
	if len(left.Pages) == 0 {
		err := p.sendOnce(ctx, log, ch, it, 0, Message{Body: MsgNoMore})
		if errors.Is(err, errUndeliverable) || errors.Is(err, errHeld) {
			return nil
		}
		return err
	}
	if err := p.sendOnce(ctx, log, ch, it, 0, Message{Body: left.Pages[0]}); err != nil && !errors.Is(err, errUndeliverable) && !errors.Is(err, errHeld) {
		return err
	}
	left.Pages, left.MoreSeq = left.Pages[1:], it.seq
	p.setNoPages(u, false)
	data, _ := json.Marshal(left)
	if _, err := p.kv.Update(ctx, pagesKey(u), data, entry.Revision()); err != nil {
		return fmt.Errorf("store pages: %w", err)
	}
	return nil
}

func pagesKey(u contract.User) string { return "pages." + u.Key() }

// hasNoPages reports whether u is known to have no pages left.
func (p *pusher) hasNoPages(u contract.User) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.noPages[u.Key()]
}

// setNoPages notes that u has no pages left (none), or may have some.
func (p *pusher) setNoPages(u contract.User, none bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !none:
		delete(p.noPages, u.Key())
	case p.noPages == nil || len(p.noPages) >= 100_000:
		p.noPages = map[string]bool{u.Key(): true}
	default:
		p.noPages[u.Key()] = true
	}
}

// sendOnce sends part i of an event unless an earlier delivery of the
// event already did, retrying failures that may pass; then it waits for
// the provider to report the message sent, if status reports are on. On a
// channel with a reply window, a message refused outside it, or behind
// one held, is held (errHeld).
func (p *pusher) sendOnce(ctx context.Context, log zerolog.Logger, ch channel, it item, part int, m Message) error {
	log = log.With().Str("kind", string(it.ev.Kind)).Str("job_id", it.ev.JobID).Int("part", part).Logger()
	if ch.window != nil {
		if err := p.heldBefore(ctx, log, ch, it, part, m); err != nil {
			return err
		}
	}
	err := p.sendKeyed(ctx, log, ch, it, slot{seq: it.seq, part: strconv.Itoa(part)}, m)
	var closed closedWindow
	if errors.As(err, &closed) {
		return p.hold(ctx, log, ch, it, part, m, closed.attempts)
	}
	return err
}

// slot names one message egress sends: its key in the egress bucket,
// sent.<user>.<seq>.<part>, and its dead letter's Nats-Msg-Id.
type slot struct {
	seq  uint64 // EVENTS sequence of the event that asked for it
	part string
}

// sendKeyed sends m once for its slot: see sendOnce. A refusal outside
// the channel's reply window is a closedWindow, with no dead letter.
func (p *pusher) sendKeyed(ctx context.Context, log zerolog.Logger, ch channel, it item, s slot, m Message) error {
	// The key holds the provider's id once sent; before the first try it
	// is marked with the time, so that a crash between a send and its
	// record can be told from a send never tried. Creating that mark is
	// a first try's only operation; a mark already there (a redelivery)
	// is read.
	key := sentKey(it.ev.User, s)
	_, err := p.kv.Create(ctx, key, []byte(triedMark+time.Now().UTC().Format(time.RFC3339Nano)))
	if errors.Is(err, jetstream.ErrKeyExists) {
		if sent, err := p.sentBefore(ctx, log, ch, it, key, m); err != nil || sent {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("tried mark: %w", err)
	}
	var unanswered bool // the last try failed without the provider's answer
	var tried time.Time
	for attempt := 1; ; attempt++ {
		if f, ok := ch.sender.(Finder); ok && unanswered {
			// A try that timed out may still have been taken.
			if id, err := f.Find(ctx, it.ev.User, m, tried); err == nil && id != "" {
				log.Info().Str("provider_id", id).Msg("a try that got no answer was sent; not sending again")
				_, _ = p.kv.Put(ctx, key, []byte(id))
				return nil
			}
		}
		var wait <-chan delivery
		tried = time.Now()
		id, err := ch.sender.Send(ctx, it.ev.User, m)
		if err == nil {
			if p.sent != nil && ch.waitSent {
				wait = p.sent.expect(id)
			}
			if _, err := p.kv.Put(ctx, key, []byte(id)); err != nil {
				log.Warn().Err(err).Str("provider_id", id).Msg("sent mark not stored; a redelivery would send again")
			}
			messagesOut.WithLabelValues(it.ev.User.Channel, string(it.ev.Kind)).Inc()
			log.Info().Str("provider_id", id).Int("body_len", len(m.Body)).Int("media", len(m.Media)).Int("attempt", attempt).Msg("sent")
			if wait != nil {
				d := p.sent.await(ctx, log, it.msg, id, wait)
				if ch.window != nil && d.code == ch.window.closed && (d.status == "failed" || d.status == "undelivered") {
					sendErrors.WithLabelValues(it.ev.User.Channel, strconv.Itoa(d.code)).Inc()
					return closedWindow{attempts: attempt}
				}
			}
			return nil
		}
		var se *SendError
		if !errors.As(err, &se) {
			se = &SendError{Err: err}
		}
		unanswered = se.Status == 0 && se.Code == 0
		sendErrors.WithLabelValues(it.ev.User.Channel, strconv.Itoa(se.Code)).Inc()
		l := log.With().Err(se.Err).Int("code", se.Code).Int("status", se.Status).Int("attempt", attempt).Logger()
		if hint := explainTwilio(se.Code); hint != "" {
			l = l.With().Str("hint", hint).Logger()
		}
		if ch.window != nil && se.Code == ch.window.closed {
			return closedWindow{attempts: attempt}
		}
		if se.Permanent || attempt >= p.retry.Attempts {
			l.Error().Msg("message not delivered; dead letter published")
			dead := contract.Event{Kind: contract.KindUndelivered, User: it.ev.User, JobID: it.ev.JobID,
				Text: m.Body, Code: se.Code, Attempts: attempt}
			if err := contract.PublishEvent(ctx, p.js, dead, contract.MsgID(it.ev.User, strconv.FormatUint(s.seq, 10), "undelivered", s.part)); err != nil {
				return err
			}
			return errUndeliverable
		}
		d := max(p.retry.delay(attempt), se.RetryAfter)
		l.Warn().Dur("retry_in", d).Msg("send failed; will retry")
		if err := sleep(ctx, it.msg, d); err != nil {
			return err
		}
	}
}

// sentBefore reads the mark at key of a message sent again (a redelivery)
// and reports whether it was sent, or held, before: a mark of a try that
// the provider has no record of is not.
func (p *pusher) sentBefore(ctx context.Context, log zerolog.Logger, ch channel, it item, key string, m Message) (bool, error) {
	e, err := p.kv.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("sent mark: %w", err)
	}
	if string(e.Value()) == heldMark {
		return true, nil // held for the person, and sent or still held
	}
	at, tried := strings.CutPrefix(string(e.Value()), triedMark)
	if !tried {
		return true, nil
	}
	if f, ok := ch.sender.(Finder); ok {
		since, _ := time.Parse(time.RFC3339Nano, at)
		id, err := f.Find(ctx, it.ev.User, m, since)
		if err != nil {
			return false, fmt.Errorf("look for an unrecorded send: %w", err)
		}
		if id != "" {
			log.Info().Str("provider_id", id).Msg("sent before a restart; not sending again")
			if _, err := p.kv.Put(ctx, key, []byte(id)); err != nil {
				return false, fmt.Errorf("sent mark: %w", err)
			}
			return true, nil
		}
	}
	log.Info().Str("tried_at", at).Msg("tried before a restart and not known to the provider; sending")
	return false, nil
}

// triedMark starts the value of a send's key until the provider's id
// replaces it.
const triedMark = "tried "

// sleep waits d, keeping msg alive in JetStream meanwhile.
func sleep(ctx context.Context, msg jetstream.Msg, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(contract.EgressAckWait / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case <-tick.C:
			_ = msg.InProgress()
		}
	}
}

// sentWaiter matches delivery reports to the messages waiting for them.
type sentWaiter struct {
	timeout time.Duration
	mu      sync.Mutex
	waiting map[string]chan delivery // by provider id
	early   map[string]early         // reports that came before their waiter
}

// delivery is the provider's final report on a message: its status and
// error code.
type delivery struct {
	status string
	code   int
}

type early struct {
	delivery
	at time.Time
}

func newSentWaiter(timeout time.Duration) *sentWaiter {
	return &sentWaiter{timeout: timeout, waiting: map[string]chan delivery{}, early: map[string]early{}}
}

// final reports whether a status ends the wait: the message left the
// provider, or never will.
func final(status string) bool {
	switch status {
	case "sent", "delivered", "read", "failed", "undelivered", "canceled":
		return true
	}
	return false
}

func (s *sentWaiter) expect(id string) <-chan delivery {
	c := make(chan delivery, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.early[id]; ok {
		delete(s.early, id)
		c <- e.delivery
		return c
	}
	s.waiting[id] = c
	return c
}

func (s *sentWaiter) report(id, status string, code int) {
	if !final(status) {
		return
	}
	d := delivery{status: status, code: code}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.waiting[id]; ok {
		delete(s.waiting, id)
		c <- d
		return
	}
	now := time.Now()
	if len(s.early) > 1000 {
		for k, e := range s.early {
			if now.Sub(e.at) > time.Minute {
				delete(s.early, k)
			}
		}
	}
	s.early[id] = early{delivery: d, at: now}
}

// await waits for the provider's report on message id and returns it;
// zero when none came in time.
func (s *sentWaiter) await(ctx context.Context, log zerolog.Logger, msg jetstream.Msg, id string, c <-chan delivery) delivery {
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	tick := time.NewTicker(contract.EgressAckWait / 3)
	defer tick.Stop()
	for {
		select {
		case d := <-c:
			if d.status == "failed" || d.status == "undelivered" {
				l := log.Warn().Str("provider_id", id).Str("status", d.status).Int("code", d.code)
				if hint := explainTwilio(d.code); hint != "" {
					l = l.Str("hint", hint)
				}
				l.Msg("provider could not deliver the message")
			}
			return d
		case <-t.C:
			s.mu.Lock()
			delete(s.waiting, id)
			s.mu.Unlock()
			log.Warn().Str("provider_id", id).Dur("waited", s.timeout).Msg("no status callback in time; sending on (is PUBLIC_URL reachable by Twilio?)")
			return delivery{}
		case <-tick.C:
			_ = msg.InProgress()
		case <-ctx.Done():
			return delivery{}
		}
	}
}

var (
	messagesOut = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_messages_out_total",
		Help: "Messages sent to people through a provider, by channel and the kind of event they carry.",
	}, []string{"channel", "kind"})
	refused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_egress_refused_total",
		Help: "Events dropped by egress because their user is not on the channel's allowlist, by channel.",
	}, []string{"channel"})
	sendErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_send_errors_total",
		Help: "Failed send attempts, by channel and the provider's error code (Twilio's 20429, 63016, ...; 0: none given, e.g. a network error).",
	}, []string{"channel", "code"})
)

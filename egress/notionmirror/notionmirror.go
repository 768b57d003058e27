// Package notionmirror mirrors the runs of Notion tasks (messages whose id
// is a page's, contract.NotionJobID) onto their pages, as a consumer of
// egress's own beside the channels: the status property, and the
// progress, reply and images as comments.
package notionmirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/notion"
)

// Config: the mirror of the runs of Notion tasks (messages whose id is a page's,
// contract.NotionJobID) onto their pages: the status property moves to
// InProgress when a runner starts the task and to Done or Failed when it
// ends; progress, the reply and each image (uploaded, with its caption)
// become comments. The person's own channel gets the usual messages too.
type Config struct {
	Client *notion.Client
	// Database is the database whose status property is set (its type,
	// status or select, is read from it).
	Database string
	// StatusProperty names the status property ("Status").
	StatusProperty string
	// InProgress, Done and Failed are the status options set.
	InProgress, Done, Failed string
	// MediaURL is where egress reaches the media service, which serves
	// the images and files it uploads (by the links it signs).
	MediaURL string
	// ProgressEvery spaces progress comments on a page: lines that come
	// sooner after the last one posted are left out (default 30 s).
	ProgressEvery time.Duration
}

// DefaultProgressEvery spaces progress comments on a page by default.
const DefaultProgressEvery = 30 * time.Second

// Consumer is the durable consumer of the events egress mirrors onto
// Notion pages: every person's notice, started, progress and done events,
// one at a time, in order. It starts from the events published after it was made.
func Consumer() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:     "egress-notion",
		Description: "egress: mirror Notion tasks' runs onto their pages",
		FilterSubjects: []string{contract.AllEvents(contract.KindNotice), contract.AllEvents(contract.KindStarted),
			contract.AllEvents(contract.KindProgress), contract.AllEvents(contract.KindDone)},
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       contract.EgressAckWait,
		MaxAckPending: 1,
	}
}

// mirror is Config at work.
type mirror struct {
	cfg    Config
	js     jetstream.JetStream
	kv     jetstream.KeyValue // egress bucket: the steps done, per event
	signer contract.MediaSigner
	log    zerolog.Logger

	prop, typ string // the status property and its type, once read

	mu   sync.Mutex
	last map[string]time.Time // page task id: when progress was last posted
}

// Run mirrors events onto Notion pages until ctx ends, keeping the steps
// done per event in the egress bucket; signer signs the media links it
// downloads images by. cfg is defaulted and valid (egress.Config checks it).
func Run(ctx context.Context, js jetstream.JetStream, cfg Config, signer contract.MediaSigner, log zerolog.Logger) error {
	n := &mirror{cfg: cfg, js: js, signer: signer, log: log.With().Str("channel", "notion").Logger(), last: map[string]time.Time{}}
	var err error
	if n.kv, err = js.KeyValue(ctx, contract.BucketEgress); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketEgress, err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, contract.StreamEvents, Consumer())
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("egress consumer notion: %w", err)
	}
	return bus.Consume(ctx, js, cons, n.handle, n.log)
}

// handle mirrors one event if it is about a Notion task.
func (n *mirror) handle(ctx context.Context, msg jetstream.Msg) error {
	var ev contract.Event
	if err := contract.Decode(msg.Data(), &ev); err != nil {
		return err
	}
	page, ok := contract.NotionPage(ev.JobID)
	if !ok {
		return nil
	}
	md, err := msg.Metadata()
	if err != nil {
		return err
	}
	log := zerolog.Ctx(ctx).With().Str("page", page).Str("job_id", ev.JobID).Str("kind", string(ev.Kind)).Logger()
	st := steps{n: n, log: log, page: page, prefix: fmt.Sprintf("notion.%d.", md.Sequence.Stream)}
	switch ev.Kind {
	case contract.KindNotice:
		// What textslash told the person about the task: queued behind
		// their run, or refused because their queue is full (then the
		// page stays to do, and an edit of it starts it again).
		st.comment(ctx, "notice", "ℹ️ "+ev.Text)
	case contract.KindStarted:
		st.status(ctx, "started", n.cfg.InProgress)
	case contract.KindProgress:
		if !n.progressDue(page) {
			return nil
		}
		st.comment(ctx, "progress", "⏳ "+ev.Text)
	case contract.KindDone:
		n.mu.Lock()
		delete(n.last, page)
		n.mu.Unlock()
		for i, img := range ev.Images {
			st.image(ctx, i, img)
		}
		st.comment(ctx, "reply", doneComment(ev))
		if ev.Status == contract.StatusOK {
			st.status(ctx, "ended", n.cfg.Done)
		} else {
			st.status(ctx, "ended", n.cfg.Failed)
		}
	}
	return st.err
}

// doneComment is the comment a run's end leaves on its page.
func doneComment(ev contract.Event) string {
	var b strings.Builder
	switch ev.Status {
	case contract.StatusOK:
		b.WriteString("✅ Done.")
	case contract.StatusCanceled:
		b.WriteString("⛔ Cancelled by " + contract.Address(ev.User) + ".")
	default:
		b.WriteString("❌ Failed (" + ev.Status + ").")
	}
	if ev.Approval {
		b.WriteString(" The changes wait for " + contract.Address(ev.User) + "'s approval in their chat.")
	}
	if t := strings.TrimSpace(ev.Text); t != "" {
		b.WriteString("\n\n" + t)
	}
	return b.String()
}

// progressDue reports whether a progress comment may be posted on page
// now, and if so counts it posted.
func (n *mirror) progressDue(page string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if time.Since(n.last[page]) < n.cfg.ProgressEvery {
		return false
	}
	n.last[page] = time.Now()
	return true
}

// steps carries out one event's calls to Notion, each once: a step done
// is marked in the egress bucket (<prefix><step>), so a redelivered event
// does only what is left. A crash between a call and its mark repeats
// that call (a comment may then appear twice). The first failure stops
// the rest; a permanent one (Notion refused the request for good) is
// noted on the page and the event is done with.
type steps struct {
	n      *mirror
	log    zerolog.Logger
	page   string
	prefix string
	err    error
}

// do carries out step (a key part) once; what says it for the person
// ("set the status to Done").
func (s *steps) do(ctx context.Context, step, what string, f func() error) {
	if s.err != nil {
		return
	}
	key := s.prefix + step
	if _, err := s.n.kv.Get(ctx, key); err == nil {
		return
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		s.err = fmt.Errorf("notion step mark: %w", err)
		return
	}
	err := f()
	if notion.Permanent(err) || errors.Is(err, errNoStatus) {
		s.log.Error().Err(err).Str("step", step).Msg("notion refused the update; noted on the page")
		note := fmt.Sprintf("textslash could not %s: %v", what, err)
		if cerr := s.n.cfg.Client.Comment(ctx, s.page, note); cerr != nil {
			s.log.Error().Err(cerr).Msg("notion: the failure could not be noted on the page either")
		}
		err = nil
	}
	if err != nil {
		s.err = fmt.Errorf("notion %s: %w", step, err)
		return
	}
	if _, err := s.n.kv.Put(ctx, key, []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
		s.log.Warn().Err(err).Str("step", step).Msg("notion step mark not stored; a redelivery would repeat it")
	}
	s.log.Info().Str("step", step).Msg("notion updated")
}

// status sets the page's status to value (step names it in the mark).
func (s *steps) status(ctx context.Context, step, value string) {
	s.do(ctx, "set-status-"+step, fmt.Sprintf("set %s to %q", s.n.cfg.StatusProperty, value), func() error {
		prop, typ, err := s.n.statusProperty(ctx)
		if err != nil {
			return err
		}
		return s.n.cfg.Client.SetStatus(ctx, s.page, prop, typ, value)
	})
}

func (s *steps) comment(ctx context.Context, step, text string) {
	s.do(ctx, "comment-"+step, "add a comment", func() error { return s.n.cfg.Client.Comment(ctx, s.page, text) })
}

// image uploads a run's image or file and comments it with its caption.
func (s *steps) image(ctx context.Context, i int, img contract.Image) {
	s.do(ctx, fmt.Sprintf("attach-image-%d", i+1), "attach "+imageName(i, img), func() error {
		data, err := s.n.fetch(ctx, img)
		if errors.Is(err, errExpired) {
			return s.n.cfg.Client.Comment(ctx, s.page, fmt.Sprintf("📎 %s expired before it could be attached.", imageName(i, img)))
		}
		if err != nil {
			return err
		}
		id, err := s.n.cfg.Client.Upload(ctx, imageName(i, img), img.ContentType, data)
		if err != nil {
			return err
		}
		text := img.Caption
		if text == "" {
			text = "📎 " + imageName(i, img)
		}
		return s.n.cfg.Client.Comment(ctx, s.page, text, id)
	})
}

// fetch reads img from the media service by a link egress signs, as
// Telegram's uploads do: egress itself never reads the media store.
// errExpired when the media service no longer has it.
func (n *mirror) fetch(ctx context.Context, img contract.Image) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.cfg.MediaURL+n.signer.URL(img, time.Now()), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("image %s for upload: %w", img.ID, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, errExpired
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("image %s for upload: %s", img.ID, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, notion.MaxUploadSize+1))
	if err != nil {
		return nil, fmt.Errorf("image %s for upload: %w", img.ID, err)
	}
	return data, nil
}

// imageName is the file name an image is uploaded under.
func imageName(i int, img contract.Image) string {
	if img.Name != "" {
		return contract.SafeName(img.Name)
	}
	return fmt.Sprintf("screenshot-%d%s", i+1, contract.ImageExt(img.ContentType))
}

// statusProperty is the status property's name and type, read from the
// database at the first need; errNoStatus when the database has none of
// that name.
func (n *mirror) statusProperty(ctx context.Context) (string, string, error) {
	n.mu.Lock()
	prop, typ := n.prop, n.typ
	n.mu.Unlock()
	if typ != "" {
		return prop, typ, nil
	}
	ds, err := n.cfg.Client.DataSource(ctx, n.cfg.Database)
	if err != nil {
		return "", "", err
	}
	p, ok := ds.Properties[n.cfg.StatusProperty]
	if !ok || p.Type != "status" && p.Type != "select" {
		return "", "", fmt.Errorf("%w %q", errNoStatus, n.cfg.StatusProperty)
	}
	n.mu.Lock()
	n.prop, n.typ = p.Name, p.Type
	n.mu.Unlock()
	return p.Name, p.Type, nil
}

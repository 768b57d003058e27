package webchat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// MsgNoMorePages answers "more" on the web chat.
const MsgNoMorePages = "The web chat has no pages: press Show all under a long reply to read it whole, or Download to keep it."

// event is what the browser receives: the event plus what the web
// channel adds (where to fetch each image).
type event struct {
	contract.Event
	ImageURL  string   `json:"image_url,omitempty"`
	ImageURLs []string `json:"image_urls,omitempty"`
}

// events streams one person's events as Server-Sent Events. Each
// event's id is its EVENTS stream sequence, so a browser reconnecting with
// Last-Event-ID resumes exactly where it stopped; a new page gets the
// session's history first.
func (c *WebChat) events(w http.ResponseWriter, r *http.Request) {
	u, err := c.user(r)
	if err != nil {
		http.Error(w, "no web chat session: open / first", http.StatusUnauthorized)
		return
	}
	msgs, stop, ok := c.consume(w, r, u)
	if !ok {
		return
	}
	defer stop()
	flush := openStream(w)
	log := c.log.With().Str("user", u.Key()).Logger()
	log.Debug().Msg("web events stream open")
	keepAlive := time.NewTicker(c.cfg.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			log.Debug().Msg("web events stream closed")
			return
		case <-c.stopped:
			log.Debug().Msg("web events stream ended: the web chat stops")
			return
		case <-keepAlive.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case m := <-msgs:
			if !c.write(w, log, m) {
				continue
			}
		}
		flush()
	}
}

// consume reads u's events, from the one after the browser's
// Last-Event-ID, else from the first, until r ends or stop is called;
// false when it cannot, and r is answered.
func (c *WebChat) consume(w http.ResponseWriter, r *http.Request, u contract.User) (msgs <-chan jetstream.Msg, stop func(), ok bool) {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contract.UserEvents(u)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if last, err := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64); err == nil && last > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = last + 1
	}
	ctx := r.Context()
	cons, err := c.js.OrderedConsumer(ctx, contract.StreamEvents, cfg)
	if err != nil {
		c.log.Error().Err(err).Str("user", u.Key()).Msg("web events consumer")
		http.Error(w, "events unavailable; retry", http.StatusServiceUnavailable)
		return nil, nil, false
	}
	in := make(chan jetstream.Msg, 64)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case in <- m:
		case <-ctx.Done():
		}
	})
	if err != nil {
		c.log.Error().Err(err).Str("user", u.Key()).Msg("web events consume")
		http.Error(w, "events unavailable; retry", http.StatusServiceUnavailable)
		return nil, nil, false
	}
	return in, cc.Stop, true
}

// openStream answers with an event stream's headers and returns how to
// flush what is written to it (a no-op when w cannot).
func openStream(w http.ResponseWriter) (flush func()) {
	flush = func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	flush()
	return flush
}

// write writes one event to the stream as the browser gets it;
// false when it is skipped (unreadable).
func (c *WebChat) write(w http.ResponseWriter, log zerolog.Logger, m jetstream.Msg) bool {
	md, err := m.Metadata()
	if err != nil {
		return false
	}
	log = bus.TraceLog(log, bus.Trace(m.Headers()))
	var ev contract.Event
	if err := contract.Decode(m.Data(), &ev); err != nil {
		log.Warn().Err(err).Uint64("seq", md.Sequence.Stream).Msg("skipping event")
		return false
	}
	if ev.Kind == contract.KindMore {
		// The web chat shows every reply whole: there are no pages.
		ev.Kind, ev.Text = contract.KindNotice, MsgNoMorePages
	}
	out := event{Event: ev}
	if ev.Image != nil {
		out.ImageURL = c.cfg.Signer.URL(*ev.Image, time.Now())
	}
	for _, img := range ev.Images {
		out.ImageURLs = append(out.ImageURLs, c.cfg.Signer.URL(img, time.Now()))
	}
	data, _ := json.Marshal(out)
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", md.Sequence.Stream, ev.Kind, data)
	log.Debug().Str("kind", string(ev.Kind)).Str("job_id", ev.JobID).Uint64("seq", md.Sequence.Stream).Msg("web event streamed")
	return true
}

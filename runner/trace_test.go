package runner

import (
	"encoding/base64"
	"errors"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
	"github.com/textslash/textslash/runner/internal/testkit"
)

// Every event the runner publishes for a job (started, progress, image,
// done) carries the job's trace, and so do its media fetch requests and
// its log lines about the job.
func TestRunnerCarriesTrace(t *testing.T) {
	e := newRunnerEnv(t)
	var logs natstest.Logs
	e.logs = &logs
	e.start(Config{Timeout: time.Minute, Heartbeat: 200 * time.Millisecond})
	u := e.user(contract.ChannelWhatsApp, "15551234567")

	// The media fetch service, refusing: the runner goes on without the image.
	fetches := make(chan string, 1)
	sub, err := e.js.Conn().Subscribe(contract.MediaFetchSubject(u.Channel), func(m *nats.Msg) {
		fetches <- bus.Trace(m.Header)
		refusal := nats.NewMsg(m.Reply)
		refusal.Header.Set(micro.ErrorCodeHeader, "503")
		_ = m.RespondMsg(refusal)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	job := contract.Job{ID: "m1", User: u, At: time.Now().UTC(),
		Media: []contract.Media{{URL: "https://api.twilio.com/media/1", ContentType: "image/png"}},
		Text: "mkdir -p " + handover.DropDir + " && echo " + base64.StdEncoding.EncodeToString(testkit.PNG(t)) +
			" | base64 -d > " + handover.DropDir + "/app.png && sleep 0.7 && echo hi"}
	trace := e.tracedJob(job)
	e.waitDone(u, job.ID, runnerWait)

	select {
	case got := <-fetches:
		if got != trace {
			t.Errorf("media fetch request: trace %q; want the job's %q", got, trace)
		}
	default:
		t.Error("the runner asked for no media")
	}
	var kinds []string
	for kind, got := range e.eventTraces(u) {
		if got != trace {
			t.Errorf("%s event: trace %q; want the job's %q", kind, got, trace)
		}
		if !slices.Contains(kinds, kind) {
			kinds = append(kinds, kind)
		}
	}
	if want := []string{"started", "progress", "image", "done"}; !slices.Equal(kinds, want) {
		t.Errorf("event kinds %q; want %q", kinds, want)
	}
	for _, msg := range []string{"attachment not fetched", "run started", "run ended"} {
		if n := len(logs.Find(t, msg, map[string]string{"job_id": job.ID, contract.LogTrace: trace})); n != 1 {
			t.Errorf("%d lines %q with the job's trace; want 1", n, msg)
		}
	}
}

// Screenshots an agent takes through the endpoint are image events on
// its job's journey.
func TestShotCarriesTrace(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Chromium: shottest.Chromium(t)})
	u := e.user(contract.ChannelWeb, "alice")
	trace := e.tracedJob(contract.Job{ID: "s1", User: u, At: time.Now().UTC(),
		Text: `curl -s -X POST -H "Authorization: Bearer $TEXTSLASH_SHOT_TOKEN" --data-urlencode url=` + page(t) + ` "$TEXTSLASH_SHOT_URL"`})
	if ev := e.waitDone(u, "s1", runnerWait); len(ev.Images) != 1 {
		t.Fatalf("%d images (%q); want the screenshot", len(ev.Images), ev.Text)
	}
	images := 0
	for kind, got := range e.eventTraces(u) {
		if kind == string(contract.KindImage) {
			images++
			if got != trace {
				t.Errorf("screenshot's image event: trace %q; want the job's %q", got, trace)
			}
		}
	}
	if images != 1 {
		t.Errorf("%d image events; want 1", images)
	}
}

// tracedJob publishes job as the dispatcher does, with a new trace, and
// returns the trace.
func (e *runnerEnv) tracedJob(job contract.Job) string {
	e.t.Helper()
	data, err := contract.Encode(&job)
	if err != nil {
		e.t.Fatal(err)
	}
	trace := contract.NewTrace("")
	if _, err := bus.Publish(contract.WithTrace(e.t.Context(), trace), e.js, contract.JobSubject(job.User), data, contract.MsgID(job.User, job.ID, "job")); err != nil {
		e.t.Fatal(err)
	}
	return trace
}

// eventTraces yields the kind and trace header of each of u's events, in
// stream order.
func (e *runnerEnv) eventTraces(u contract.User) iter.Seq2[string, string] {
	e.t.Helper()
	st, err := e.js.Stream(e.t.Context(), contract.StreamEvents)
	if err != nil {
		e.t.Fatal(err)
	}
	return func(yield func(string, string) bool) {
		for seq := uint64(1); ; {
			m, err := st.GetMsg(e.t.Context(), seq, jetstream.WithGetMsgSubject(contract.UserEvents(u)))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return
			}
			if err != nil {
				e.t.Fatal(err)
			}
			seq = m.Sequence + 1
			if !yield(m.Subject[len(contract.EventSubject(u, "")):], bus.Trace(m.Header)) {
				return
			}
		}
	}
}

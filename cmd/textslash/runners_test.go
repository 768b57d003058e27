package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/cmd/internal/app"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

// Two runner processes share the jobs with per-user affinity: a user's
// messages all run on the runner holding their workspace; when that runner
// is killed, the other takes its users over once its heartbeat expires, and
// keeps them when the first comes back; stopped, a runner finishes its run
// before handing its users over. Each runner runs one job at a time,
// so four users writing at once keep both busy. The runners keep their
// workspaces apart (each its own data directory), and a user's workspace
// follows them from one to the other through its snapshots.
func TestTwoRunners(t *testing.T) {
	ns := runNATSUsers(t)
	api := twiliotest.NewAPI(t)
	ingressPort := freePort(t)
	phones := []string{"+15551230001", "+15551230002", "+15551230003", "+15551230004"}
	env := []string{
		"TEXTSLASH_MEDIA_KEY=a-key-shared-by-media-and-egress",
		"PUBLIC_URL=http://127.0.0.1:" + ingressPort,
		"TWILIO_ACCOUNT_SID=" + api.AccountSID,
		"TWILIO_AUTH_TOKEN=" + api.AuthToken,
		"TWILIO_PHONE_NUMBER=" + twilioFrom,
		"TEXTSLASH_TWILIO_API_URL=" + api.URL,
		"ALLOWED_PHONE_NUMBERS=" + strings.Join(phones, ","),
		"TEXTSLASH_AGENT=shell",
		"TEXTSLASH_CONCURRENCY=1",
	}
	var in *instance
	for _, s := range []string{app.Ingress, app.Dispatcher, app.Media, app.Egress} {
		e := append(slices.Clone(env), ns.env(s)...)
		if s == app.Ingress {
			e = append(e, "PORT="+ingressPort)
		}
		inst := startService(t, s, e...)
		if s == app.Ingress {
			in = inst
		}
	}
	runners := map[string]*instance{}
	for _, id := range []string{"r1", "r2"} {
		runners[id] = startService(t, app.Runner, append(slices.Clone(env), append(ns.env(app.Runner),
			"TEXTSLASH_RUNNER_ID="+id, "TEXTSLASH_STOP_GRACE=20s", "TEXTSLASH_SNAPSHOTS=true")...)...)
	}
	s := &twilioServe{instance: in, api: api}

	// Each reply is the workspace the message ran in, which names the runner.
	// A workspace restored on another runner is announced first; replies
	// leaves those notices out, and restored counts them by user.
	sent := 0
	restored := map[string]int{}
	replies := func(n int) []twiliotest.Message {
		t.Helper()
		var out []twiliotest.Message
		natstest.CheckFor(t, 60*time.Second, 5*time.Millisecond, func() error {
			out = nil
			seen := map[string]int{}
			for _, m := range api.Messages() {
				if strings.HasPrefix(m.Body, "Your workspace moved to another server") {
					seen[strings.TrimPrefix(m.To, "whatsapp:")]++
					continue
				}
				out = append(out, m)
			}
			if len(out) < n {
				return fmt.Errorf("%d replies; want %d: %q", len(out), n, sentBodies(out))
			}
			restored = seen
			return nil
		})
		return out
	}
	ask := func(phones ...string) map[string]string {
		t.Helper()
		for _, p := range phones {
			s.webhook(t, "whatsapp:"+p, "sleep 0.3; pwd", nil)
		}
		sent += len(phones)
		msgs := replies(sent)
		ranOn := map[string]string{}
		for _, m := range msgs[sent-len(phones):] {
			for id, r := range runners {
				if strings.HasPrefix(m.Body, r.Data+"/") {
					ranOn[strings.TrimPrefix(m.To, "whatsapp:")] = id
				}
			}
		}
		if len(ranOn) != len(phones) {
			t.Fatalf("replies %q: want each user's workspace on r1 or r2", sentBodies(msgs[sent-len(phones):]))
		}
		return ranOn
	}

	holder := ask(phones...)
	usersOf := map[string][]string{}
	for _, p := range phones {
		usersOf[holder[p]] = append(usersOf[holder[p]], p)
	}
	if len(usersOf["r1"]) == 0 || len(usersOf["r2"]) == 0 {
		t.Fatalf("users by runner %v; want both runners used", usersOf)
	}
	for range 2 {
		for p, id := range ask(phones...) {
			if id != holder[p] {
				t.Errorf("%s ran on %s; its workspace is on %s", p, id, holder[p])
			}
		}
	}

	// say sends one message and returns its reply.
	say := func(phone, text string) string {
		t.Helper()
		s.webhook(t, "whatsapp:"+phone, text, nil)
		sent++
		return replies(sent)[sent-1].Body
	}
	// One of r1's users leaves a file in their workspace.
	moved := usersOf["r1"][0]
	if got := say(moved, "echo kept > notes.txt && echo written"); got != "written" {
		t.Fatalf("writing notes.txt on r1: %q", got)
	}

	// r1 dies: its users move to r2 once r1's heartbeat is over; r2's stay.
	runners["r1"].kill()
	for p, id := range ask(phones...) {
		if id != "r2" {
			t.Errorf("with r1 killed, %s ran on %s", p, id)
		}
	}
	if n := counter(t, runners["r2"].URL, "textslash_jobs_handed_back_total"); n == 0 {
		t.Error("r2 handed back none of r1's users' jobs while r1's heartbeat lasted")
	}
	// Their workspace came along, though r2 never shared r1's disk.
	for _, p := range usersOf["r1"] {
		if restored[p] != 1 {
			t.Errorf("%s, moved from r1 to r2, was told of %d restores; want 1", p, restored[p])
		}
	}
	if got := say(moved, "cat notes.txt"); got != "kept" {
		t.Errorf("notes.txt on r2, after r1 died: %q; want the file written on r1", got)
	}
	if got := say(moved, "echo changed > notes.txt && echo written"); got != "written" {
		t.Fatalf("changing notes.txt on r2: %q", got)
	}
	// r1 is back: the users stay where their workspaces now are.
	runners["r1"].start(t)
	for p, id := range ask(phones...) {
		if id != "r2" {
			t.Errorf("after r1 came back, %s ran on %s; want r2, which holds it now", p, id)
		}
	}

	// r2 stops cleanly in the middle of a run: the run finishes (its reply
	// is the real one, from r2's workspace), r2 says it is gone, and r1
	// takes everyone at once.
	started, err := ns.NC.SubscribeSync(contract.AllEvents(contract.KindStarted))
	if err != nil {
		t.Fatal(err)
	}
	s.webhook(t, "whatsapp:"+phones[0], "sleep 1; pwd", nil)
	sent++
	if _, err := started.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("the run did not start: %v", err)
	}
	runners["r2"].stop()
	if last := replies(sent)[sent-1]; !strings.HasPrefix(last.Body, runners["r2"].Data+"/") {
		t.Errorf("reply to the run r2 was stopped in: %q; want it finished, in r2's workspace", last.Body)
	}
	for p, id := range ask(phones...) {
		if id != "r1" {
			t.Errorf("with r2 stopped, %s ran on %s", p, id)
		}
	}
	// r1 still had its old copy of that workspace: the newer one, from
	// r2, replaced it.
	if got := say(moved, "cat notes.txt"); got != "changed" {
		t.Errorf("notes.txt back on r1: %q; want the change made on r2", got)
	}
}

// counter reads a counter's value from a process's /metrics.
func counter(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("%s/metrics has no %s", url, name)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(fmt.Errorf("%s: %w", name, err))
	}
	return v
}

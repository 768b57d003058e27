package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/cmd/internal/app"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/twiliotest"
)

// chaosToken is the unique token each chaos message carries; the agent logs
// it and answers "done <token>".
var chaosToken = regexp.MustCompile(`chaos-u\d+-m\d+`)

// TestChaos is TestCrashLoop's sibling on WhatsApp: users send signed
// Twilio webhooks to the all-in-one, answered by an instant agent through
// a fake Twilio API, while textslash is SIGKILLed at random moments and
// restarted. Each user sends their next message once the previous one got
// its final reply; a webhook is retried with the same MessageSid until it
// gets 200, as Twilio retries while textslash is down. At the end it
// counts, from the agent's own log and the fake Twilio's log, how many
// times each message ran and how many final replies it got, and prints
// the table.
//
// Pass, as TestCrashLoop counts: every message got exactly one final
// reply and ran at most once, and exactly once unless that reply says it
// was interrupted — a run cut by a kill is the message's one run (its
// command may or may not have begun) and is never run again.
//
// Short by default (20 users × 5 messages, 4 kills); scripts/chaos runs
// the full form: TEXTSLASH_CHAOS_USERS, TEXTSLASH_CHAOS_MESSAGES,
// TEXTSLASH_CHAOS_KILLS.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos takes ~30 s")
	}
	chaos(t, false)
}

// TestChaosServices is TestChaos with the five services as processes of
// their own on a NATS server that stays up (as compose.yaml runs them):
// each kill SIGKILLs one service chosen at random and starts it again.
func TestChaosServices(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos takes ~30 s")
	}
	chaos(t, true)
}

func chaos(t *testing.T, separate bool) {
	users := chaosEnv(t, "TEXTSLASH_CHAOS_USERS", 20)
	perUser := chaosEnv(t, "TEXTSLASH_CHAOS_MESSAGES", 5)
	kills := chaosEnv(t, "TEXTSLASH_CHAOS_KILLS", 4)
	total := users * perUser

	// The agent's own log, which the agent user must be able to append to.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runlog := filepath.Join(dir, "runs.log")
	if err := os.WriteFile(runlog, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(runlog, 0o666); err != nil {
		t.Fatal(err)
	}
	agent := fmt.Sprintf(`read -r m; echo "$m" >> %s; echo "done $m"`, runlog)

	api := twiliotest.NewAPI(t, twiliotest.Quiet()) // a failure shows its table and errors, not 2,000 requests
	numbers := make([]string, users)
	userOf := map[string]int{} // "whatsapp:+…" → user
	for u := range numbers {
		numbers[u] = fmt.Sprintf("+1555200%04d", u)
		userOf["whatsapp:"+numbers[u]] = u
	}
	port := freePort(t)
	env := []string{
		"PORT=" + port,
		"PUBLIC_URL=http://127.0.0.1:" + port,
		"TWILIO_ACCOUNT_SID=" + api.AccountSID,
		"TWILIO_AUTH_TOKEN=" + api.AuthToken,
		"TWILIO_PHONE_NUMBER=" + twilioFrom,
		"TEXTSLASH_TWILIO_API_URL=" + api.URL,
		"ALLOWED_PHONE_NUMBERS=" + strings.Join(numbers, ","),
		"TEXTSLASH_AGENT=" + agent,
		"TEXTSLASH_SANDBOX_SHARE=" + dir, // the agent's log, outside its sandbox
		"TEXTSLASH_LOG_LEVEL=info",
	}
	if u := claudetest.AgentUser(t); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	start := time.Now()
	var inst *instance
	var tap string // the NATS URL to read streams at
	victims := map[string]*instance{}
	if separate {
		ns := runNATSUsers(t)
		tap = ns.adminURL()
		env = append(env, "TEXTSLASH_MEDIA_KEY=a-key-shared-by-media-and-egress")
		for _, s := range app.All {
			e := append(slices.Clone(env), ns.env(s)...)
			if s != app.Ingress {
				e = append(e, "PORT="+freePort(t)) // the last PORT wins
			}
			victims[s] = startService(t, s, e...)
		}
		inst = victims[app.Ingress]
	} else {
		inst = startServe(t, env...)
		victims["textslash"] = inst
		tap = inst.adminURL(t)
	}
	names := slices.Sorted(maps.Keys(victims))
	killedOf := map[string]int{}
	webhookURL := inst.URL + "/webhook"

	// The watcher follows the fake Twilio's log and counts each user's
	// final replies (anything but the "Got it" of a queued message), so
	// that a user sends their next message after the previous reply.
	finals := make([]atomic.Int64, users)
	var finalsAll atomic.Int64
	stopWatch := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		seen := 0
		for {
			msgs := api.Messages()
			for _, m := range msgs[seen:] {
				if u, ok := userOf[m.To]; ok && !queuedNotice(m.Body) {
					finals[u].Add(1)
					finalsAll.Add(1)
				}
			}
			seen = len(msgs)
			select {
			case <-stopWatch:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	defer func() { close(stopWatch); watch.Wait() }()

	// Each user sends their messages one after another.
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: users}}
	sentAt := make([][]time.Time, users) // first attempt of each message
	var posts atomic.Int64
	var senders sync.WaitGroup
	for u := range users {
		sentAt[u] = make([]time.Time, perUser)
		senders.Go(func() {
			for i := range perUser {
				token, sid := chaosKey(u, i), chaosSID(u, i)
				before := finals[u].Load()
				sentAt[u][i] = time.Now()
				if !chaosPost(client, api.AuthToken, webhookURL, numbers[u], token, sid, &posts) {
					t.Errorf("%s (%s): webhook never answered 200 in 2 minutes", token, sid)
				}
				// Its reply; a lost one shows in the table.
				for deadline := time.Now().Add(2 * time.Minute); finals[u].Load() == before && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	sendersDone := make(chan struct{})
	go func() { senders.Wait(); close(sendersDone) }()

	// Kill at random moments of the flow: once a random number of replies
	// (within the first 90%) was sent, and 0–100 ms more.
	points := make([]int, kills)
	for k := range points {
		points[k] = rand.IntN(max(total*9/10, 1))
	}
	slices.Sort(points)
	var down time.Duration
	killed := 0
kill:
	for _, p := range points {
		for finalsAll.Load() < int64(p) {
			select {
			case <-sendersDone:
				break kill
			case <-time.After(2 * time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
		name := names[rand.IntN(len(names))]
		victim := victims[name]
		t0 := time.Now()
		victim.kill()
		killed++
		killedOf[name]++
		victim.start(t)
		down += time.Since(t0)
	}
	<-sendersDone
	flowed := time.Since(start)

	// Settle: nothing left to route, run or send, so that a late duplicate
	// would be in the logs.
	if err := chaosSettle(t, tap, 2*time.Minute); err != nil {
		t.Errorf("not settled after 2 minutes: %v", err)
	}

	// Runs, from the agent's own log.
	runs := map[string]int{}
	data, err := os.ReadFile(runlog)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Fields(string(data)) {
		runs[line]++
	}

	// Final replies, from the fake Twilio's log. A reply carrying a token
	// is that message's. One without (the runner that found the run cut
	// says only that it was interrupted) is, as egress sends a user's
	// replies in order, the earliest message its user had sent by then
	// that has no reply yet; failing that, a repeat of the latest one
	// already told it was interrupted.
	type reply struct{ ok, interrupted, other int }
	replies := make([][]reply, users)
	for u := range replies {
		replies[u] = make([]reply, perUser)
	}
	add := func(r *reply, token, body string) {
		switch {
		case body == "done "+token:
			r.ok++
		case strings.HasPrefix(body, runner.MsgInterrupted):
			r.interrupted++
		default:
			r.other++
		}
	}
	var notices int
	var strays []string
	type tokenless struct {
		u int
		m twiliotest.Message
	}
	var later []tokenless
	for _, m := range api.Messages() {
		u, ok := userOf[m.To]
		switch {
		case !ok:
			strays = append(strays, fmt.Sprintf("to %s: %q", m.To, m.Body))
		case queuedNotice(m.Body):
			notices++
		default:
			token := chaosToken.FindString(m.Body)
			var tu, ti int
			if token == "" {
				later = append(later, tokenless{u, m})
			} else if _, err := fmt.Sscanf(token, "chaos-u%d-m%d", &tu, &ti); err != nil || tu != u || ti >= perUser {
				strays = append(strays, fmt.Sprintf("to %s: %q", m.To, m.Body))
			} else {
				add(&replies[u][ti], token, m.Body)
			}
		}
	}
	for _, l := range later {
		sent := 0 // messages the user had sent by then
		for sent < perUser && !sentAt[l.u][sent].IsZero() && !sentAt[l.u][sent].After(l.m.At) {
			sent++
		}
		pick := -1
		for i := range sent {
			if r := replies[l.u][i]; r.ok+r.interrupted+r.other == 0 {
				pick = i
				break
			}
		}
		for i := sent - 1; i >= 0 && pick < 0; i-- {
			if replies[l.u][i].interrupted > 0 {
				pick = i
			}
		}
		if pick < 0 {
			pick = sent - 1
		}
		if pick < 0 {
			strays = append(strays, fmt.Sprintf("to %s before any message: %q", l.m.To, l.m.Body))
			continue
		}
		add(&replies[l.u][pick], chaosKey(l.u, pick), l.m.Body)
	}

	// The done events in EVENTS, one per message whatever the crashes
	// (their Nats-Msg-Id is the job's), must agree with the replies.
	dones := readDones(t, tap)
	var disagree []string

	// The table: runs × final replies, and how the single replies read.
	var table [3][3]int // [ran 0, 1, 2+][replies 0, 1, 2+]
	var ok, interrupted, interruptedUnrun, other int
	var bad []string
	for u := range users {
		for i := range perUser {
			token := chaosKey(u, i)
			n, r := runs[token], replies[u][i]
			got := r.ok + r.interrupted + r.other
			switch d := dones[strings.TrimPrefix(numbers[u], "+")+" "+chaosSID(u, i)]; {
			case len(d) != 1:
				disagree = append(disagree, fmt.Sprintf("%s: %d done events in EVENTS; want 1", token, len(d)))
			case got == 1 && (r.ok == 1) != (d[0].Status == contract.StatusOK),
				got == 1 && (r.interrupted == 1) != (d[0].Status == contract.StatusInterrupted):
				disagree = append(disagree, fmt.Sprintf("%s: done event %s %q; its reply at Twilio says otherwise", token, d[0].Status, d[0].Text))
			}
			table[min(n, 2)][min(got, 2)]++
			switch {
			case got == 1 && r.ok == 1 && n == 1:
				ok++
			case got == 1 && r.interrupted == 1 && n <= 1:
				interrupted++
				if n == 0 {
					interruptedUnrun++
				}
			default:
				if got == 1 && r.other == 1 {
					other++
				}
				bad = append(bad, fmt.Sprintf("%s: ran %d times; final replies: %d done, %d interrupted, %d other",
					token, n, r.ok, r.interrupted, r.other))
			}
		}
	}
	var b strings.Builder
	what := "textslash serve"
	if separate {
		var parts []string
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%s %d", n, killedOf[n]))
		}
		what = "a service (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(&b, "chaos: %d users × %d messages = %d signed WhatsApp webhooks (%d POSTs with retries), %d SIGKILLs of %s (down %s in all); flow %s, settled %s\n",
		users, perUser, total, posts.Load(), killed, what, down.Round(time.Millisecond), flowed.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(&b, "%-14s %10s %10s %10s\n", "", "0 replies", "1 reply", "2+ replies")
	for n, label := range []string{"ran 0 times", "ran 1 time", "ran 2+ times"} {
		fmt.Fprintf(&b, "%-14s %10d %10d %10d\n", label, table[n][0], table[n][1], table[n][2])
	}
	fmt.Fprintf(&b, "one final reply each: %d \"done <token>\" after one run; %d \"%s…\" (interrupted by a kill: %d before the agent ran, %d during its run); %d other\n",
		ok, interrupted, runner.MsgInterrupted[:40], interruptedUnrun, interrupted-interruptedUnrun, other)
	fmt.Fprintf(&b, "also sent: %d %q notices (not final replies); %d replies matching no message\n", notices, dispatcher.MsgQueued, len(strays))
	fmt.Fprintf(&b, "EVENTS: %d messages without exactly one done event agreeing with their reply\n", len(disagree))
	fmt.Fprintf(&b, "exactly one run = ran once and answered, or interrupted by a kill and told so (ran at most once, never again)\n")
	if len(bad) == 0 && len(strays) == 0 && len(disagree) == 0 {
		fmt.Fprintf(&b, "PASS: every message one run and one final reply")
	} else {
		fmt.Fprintf(&b, "FAIL: %d messages without exactly one run and one final reply", len(bad))
	}
	t.Log(b.String())
	for _, s := range bad[:min(len(bad), 20)] {
		t.Error(s)
	}
	if len(bad) > 20 {
		t.Errorf("… and %d more", len(bad)-20)
	}
	for _, s := range strays[:min(len(strays), 20)] {
		t.Errorf("a reply to no message: %s", s)
	}
	for _, s := range disagree[:min(len(disagree), 20)] {
		t.Error(s)
	}
}

// chaosKey is message i of user u, as the text it sends: the unique token
// the agent logs and answers with.
func chaosKey(u, i int) string { return fmt.Sprintf("chaos-u%d-m%d", u, i) }

// chaosSID is message i of user u's MessageSid.
func chaosSID(u, i int) string { return fmt.Sprintf("SM%016d%016d", u, i) }

// chaosEnv is a positive integer from the environment, or def.
func chaosEnv(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || (n == 0 && name != "TEXTSLASH_CHAOS_KILLS") {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// chaosPost sends a signed inbound WhatsApp message, as Twilio would, until
// textslash answers 200: Twilio retries a webhook it could not deliver, with
// the same MessageSid.
func chaosPost(client *http.Client, token, url, from, body, sid string, posts *atomic.Int64) bool {
	form := twiliotest.InboundParams("whatsapp:"+from, "whatsapp:"+twilioFrom, body, sid)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		posts.Add(1)
		resp, err := client.Do(twiliotest.SignedRequest(token, url, url, form))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(time.Duration(20+rand.IntN(30)) * time.Millisecond)
	}
	return false
}

// chaosSettle waits until nothing is left to route or run (IN, QUEUE and
// JOBS empty) and WhatsApp's egress has sent or given up on every event.
func chaosSettle(t *testing.T, url string, timeout time.Duration) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	check := func() error {
		for _, name := range []string{contract.StreamIn, contract.StreamQueue, contract.StreamJobs} {
			s, err := js.Stream(t.Context(), name)
			if err != nil {
				return err
			}
			info, err := s.Info(t.Context())
			if err != nil {
				return err
			}
			if info.State.Msgs != 0 {
				return fmt.Errorf("stream %s holds %d messages", name, info.State.Msgs)
			}
		}
		return egressIdle(t.Context(), js)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// queuedNotice reports whether body is the notice of a queued message
// ("Got it, I'll process this next." or "Got it. You're 2nd in line.").
func queuedNotice(body string) bool {
	return body == dispatcher.MsgQueued || strings.HasPrefix(body, "Got it. You're ") && strings.HasSuffix(body, " in line.")
}

// egressIdle is nil once WhatsApp's egress holds no event in hand nor any
// left to send.
func egressIdle(ctx context.Context, js jetstream.JetStream) error {
	c, err := js.Consumer(ctx, contract.StreamEvents, bus.EgressConsumer(contract.ChannelWhatsApp).Durable)
	if err != nil {
		return err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return err
	}
	if info.NumPending != 0 || info.NumAckPending != 0 {
		return fmt.Errorf("egress has %d events to send and %d unacknowledged", info.NumPending, info.NumAckPending)
	}
	return nil
}

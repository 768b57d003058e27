package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/textslash/textslash/natstest"
)

// BenchmarkOpsPerMessage counts the NATS and JetStream operations textslash
// performs for one plain message: a WhatsApp webhook "echo ok" from an
// idle user → dispatcher → shell agent → the reply at the fake Twilio (no
// status callbacks), the idle → working → idle path. A tap logged in as
// admin subscribes to ">" on the embedded server and sees every message
// the services' connection publishes: stream publishes (ts.>), KV and
// object puts ($KV.>, $O.>), JetStream API requests ($JS.API.>: direct
// gets, infos, pull requests) and acks ($JS.ACK.>). Replies to _INBOX
// subjects (the server's answers) are not operations and are not
// counted; nor are consumers' deliveries (the tap gets them too, through
// the pull requests' inboxes, under the message's own subject with a
// $JS.ACK reply) nor the server's own advisories ($JS.EVENT.>, which it
// publishes only because the tap's ">" is interested in them): they are
// listed as the server's, apart.
//
// It sends $TEXTSLASH_OPS_MESSAGES messages (200 unless set) from as many
// distinct users at 20/s, so nothing queues, waits for every reply, then
// 3 s more for trailing acks. The background (runner heartbeats, pinned
// consumers' pull requests that expire every 2 s, …) is measured over an
// idle window as long, before the load, and subtracted. It logs a table of
// every (service, kind, subject pattern) with its count per message, and
// reports the JetStream operations per message in all (js-ops/msg) and by
// service (<service>-ops/msg); the table goes to b.Log with -v, else to
// stdout (b.Log's output is cut at 10 lines without -v). Each user is new
// unless TEXTSLASH_OPS_RETURNING is set; TEXTSLASH_OPS_TRACE prints the
// first user's operations in order. A service written "a|b" is one the subject
// alone cannot tell (the services share one connection): the user's place
// in the path (before ts.in, routed, running, done) narrows it down where
// it can.
//
//	go test -run '^$' -bench OpsPerMessage ./cmd/textslash/
func BenchmarkOpsPerMessage(b *testing.B) {
	n := 200
	if s := os.Getenv("TEXTSLASH_OPS_MESSAGES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("TEXTSLASH_OPS_MESSAGES=%q: want a number of messages", s)
		}
		n = v
	}
	const rate = 20 // messages/s: each finds its user idle and nothing waiting
	const trailing = 3 * time.Second

	// With TEXTSLASH_OPS_RETURNING set, every user has sent a message
	// before (in the warm-up): what a returning user costs, without the
	// operations of a first contact (the runner taking the user's
	// workspace, reading their projects).
	returning := os.Getenv("TEXTSLASH_OPS_RETURNING") != ""

	tb := startTwilioBench(b, n+1)
	warmUser := n

	// The tap: every message published on the server, in the order the
	// server routed them (the services share one connection, so their
	// operations arrive in the order they were made).
	tapNC, err := nats.Connect(tb.inst.adminURL(b), nats.Name("ops bench tap"), nats.CustomInboxPrefix("_INBOX_opsbench"))
	if err != nil {
		b.Fatal(err)
	}
	defer tapNC.Close()
	var (
		mu     sync.Mutex
		window atomic.Int32 // which of recs new messages go to; -1: none
		recs   [4][]opRec   // probe, warm-up, background, load
	)
	window.Store(-1)
	sub, err := tapNC.Subscribe(">", func(m *nats.Msg) {
		w := window.Load()
		if w < 0 || strings.HasPrefix(m.Subject, "_INBOX") {
			return
		}
		r := opRec{subject: m.Subject, reply: m.Reply, header: m.Header}
		if len(m.Data) <= 512 {
			r.data = string(m.Data)
		}
		mu.Lock()
		recs[w] = append(recs[w], r)
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		b.Fatal(err)
	}
	if err := tapNC.Flush(); err != nil {
		b.Fatal(err)
	}
	take := func(w int) []opRec {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(recs[w])
	}

	// Make sure the tap sees every family of subject: a probe connection
	// publishes one of each (no stream keeps them) and calls the API.
	const (
		wProbe = iota
		wWarm
		wIdle
		wLoad
	)
	window.Store(wProbe)
	probe, err := nats.Connect(tb.inst.adminURL(b), nats.Name("ops bench probe"))
	if err != nil {
		b.Fatal(err)
	}
	probes := []string{"$JS.ACK.opsbench.probe", "$KV.opsbench.probe", "$O.opsbench.probe", "ts.opsbench.probe"}
	for _, s := range probes {
		if err := probe.Publish(s, nil); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := probe.Request("$JS.API.INFO", nil, 5*time.Second); err != nil {
		b.Fatalf("$JS.API.INFO: %v", err)
	}
	probe.Close()
	probes = append(probes, "$JS.API.INFO")
	natstest.CheckFor(b, 5*time.Second, 10*time.Millisecond, func() error {
		seen := map[string]bool{}
		for _, r := range take(wProbe) {
			seen[r.subject] = true
		}
		if missing := slices.DeleteFunc(slices.Clone(probes), func(s string) bool { return seen[s] }); len(missing) > 0 {
			return fmt.Errorf("the tap on > did not see %v", missing)
		}
		return nil
	})

	// Warm-up: one round trip, whose operations must include each family
	// the services use.
	window.Store(wWarm)
	if tb.webhook(warmUser, "echo ok", "SMopswarm") != http.StatusOK {
		b.Fatal("warm-up webhook refused")
	}
	tb.api.WaitMessages(b, 1, 30*time.Second)
	before := 1 // replies at the fake Twilio before the load
	if returning {
		sendPaced(b, tb, n, rate, "SMopw%029d")
		before += n
		tb.api.WaitMessages(b, before, time.Minute)
	}
	time.Sleep(trailing)
	seen := map[string]int{}
	for _, r := range take(wWarm) {
		for _, p := range []string{"$JS.API.", "$JS.ACK.", "$KV.", "ts."} {
			if strings.HasPrefix(r.subject, p) {
				seen[p]++
			}
		}
	}
	for _, p := range []string{"$JS.API.", "$JS.ACK.", "$KV.", "ts."} {
		if seen[p] == 0 {
			b.Fatalf("the warm-up message made no %s… operation the tap saw (saw %v)", p, seen)
		}
	}

	// Background: an idle window as long as the load is expected to last.
	idleFor := time.Duration(n)*time.Second/rate + trailing + time.Second
	window.Store(wIdle)
	idleStart := time.Now()
	time.Sleep(idleFor)
	window.Store(wLoad)
	idleDur := time.Since(idleStart)

	// The load: n messages from n users, one every 1/rate s.
	b.ResetTimer()
	loadStart := time.Now()
	sendPaced(b, tb, n, rate, "SMops%029d")
	msgs := tb.api.WaitMessages(b, before+n, time.Minute)
	time.Sleep(trailing)
	window.Store(-1)
	loadDur := time.Since(loadStart)
	b.StopTimer()
	to := map[string]int{}
	for _, m := range msgs[before:] {
		if m.Body == "ok" {
			to[m.To]++
		}
	}
	for i := range n {
		if to["whatsapp:"+tb.numbers[i]] != 1 {
			b.Fatalf("%d replies \"ok\" to user %d (%s) among the %d messages of the load at the fake Twilio; want 1",
				to["whatsapp:"+tb.numbers[i]], i, tb.numbers[i], len(msgs)-before)
		}
	}
	if len(msgs) != before+n {
		b.Fatalf("%d messages at the fake Twilio; want %d", len(msgs), before+n)
	}

	if os.Getenv("TEXTSLASH_OPS_TRACE") != "" {
		// One user's operations in order, with the rest of the traffic between.
		key := "whatsapp." + strings.TrimPrefix(tb.numbers[0], "+")
		var tr strings.Builder
		for _, r := range take(wLoad) {
			if userOf(r.subject) == key || strings.Contains(r.data, key) || strings.HasPrefix(r.subject, "$JS.ACK.") {
				fmt.Fprintf(&tr, "%s reply=%q hdr=%v data=%.200q\n", r.subject, r.reply, r.header, r.data)
			}
		}
		fmt.Print(tr.String())
	}

	// Count, per (service, kind, detail, pattern): per message under load,
	// and the background's share of the same length of time.
	load, idle := countOps(take(wLoad)), countOps(take(wIdle))
	bgScale := loadDur.Seconds() / idleDur.Seconds() / float64(n)
	keys := map[opKey]bool{}
	for k := range load {
		keys[k] = true
	}
	for k := range idle {
		keys[k] = true
	}
	type row struct {
		opKey
		load, bg, net float64
	}
	var rows []row
	perService := map[string]float64{}
	var total, bgTotal, core, server float64
	for k := range keys {
		r := row{opKey: k, load: float64(load[k]) / float64(n), bg: float64(idle[k]) * bgScale}
		r.net = r.load - r.bg
		rows = append(rows, r)
		switch {
		case k.service == "server":
			server += r.net
		case k.kind == "core":
			core += r.net
		default:
			total += r.net
			bgTotal += r.bg
			perService[k.service] += r.net
		}
	}
	slices.SortFunc(rows, func(a, c row) int {
		return cmp.Or(cmp.Compare(a.service, c.service), cmp.Compare(a.kind, c.kind),
			cmp.Compare(c.net, a.net), cmp.Compare(a.pattern, c.pattern), cmp.Compare(a.detail, c.detail))
	})
	var out strings.Builder
	who := "new users (a first contact each)"
	if returning {
		who = "returning users"
	}
	fmt.Fprintf(&out, "%d messages from %s in %.1fs; background measured over %.1fs idle, scaled to the load's length\n",
		n, who, loadDur.Seconds(), idleDur.Seconds())
	fmt.Fprintf(&out, "%-20s %-8s %-26s %8s %8s %8s  %s\n", "service", "kind", "detail", "net/msg", "load/msg", "bg/msg", "subject")
	for _, r := range rows {
		fmt.Fprintf(&out, "%-20s %-8s %-26s %8.3f %8.3f %8.3f  %s\n", r.service, r.kind, r.detail, r.net, r.load, r.bg, r.pattern)
	}
	fmt.Fprintf(&out, "JetStream operations per message: %.2f net (%.2f of background in the same time); by service:", total, bgTotal)
	services := slices.Sorted(maps.Keys(perService))
	for _, s := range services {
		fmt.Fprintf(&out, " %s %.2f", s, perService[s])
	}
	fmt.Fprintf(&out, "\ncore NATS messages per message: %.2f; the server's deliveries and advisories (these only with a tap on >) per message: %.2f\n", core, server)
	fmt.Fprintf(&out, "background: %.2f JetStream operations/s\n", float64(sumOps(idle))/idleDur.Seconds())
	if testing.Verbose() {
		b.Log("\n" + out.String())
	} else {
		// b.Log's output is cut at 10 lines without -v.
		fmt.Print(out.String())
	}

	b.ReportMetric(total, "js-ops/msg")
	for _, s := range services {
		b.ReportMetric(perService[s], s+"-ops/msg")
	}
	b.ReportMetric(core, "core-msgs/msg")
	b.ReportMetric(float64(sumOps(idle))/idleDur.Seconds(), "bg-js-ops/s")
	b.ReportMetric(0, "ns/op")
}

// sendPaced sends "echo ok" from users 0…n-1, one every 1/rate s, with
// message ids made by sidFormat from the user's number, and fails unless
// every webhook was taken.
func sendPaced(b *testing.B, tb *twilioBench, n, rate int, sidFormat string) {
	b.Helper()
	start := time.Now()
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tb.webhook(i, "echo ok", fmt.Sprintf(sidFormat, i)) != http.StatusOK {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d webhooks refused", f, n)
	}
}

// opRec is one message the tap saw.
type opRec struct {
	subject, reply, data string
	header               nats.Header
}

// opKey is what an operation is counted under: the service that made it
// ("a|b" when it cannot be told), its kind (store, read, pull, ack,
// other, core; advisory for the server's), a detail (cas, wpi, nak, …)
// and the subject with users and numbers replaced by *.
type opKey struct{ service, kind, detail, pattern string }

func sumOps(c map[opKey]int) int {
	t := 0
	for k, v := range c {
		if k.service != "server" && k.kind != "core" {
			t += v
		}
	}
	return t
}

// countOps classifies recs, in the order the server routed them, following
// each user along the path to tell services apart where the subject alone
// cannot.
func countOps(recs []opRec) map[opKey]int {
	phase := map[string]string{} // user key → "", routed, running, done
	counts := map[opKey]int{}
	for _, r := range recs {
		k := classify(r, phase)
		counts[k]++
	}
	return counts
}

// Who uses each stream (and the buckets' streams), from the code:
// dispatcher/, runner/, egress/, ingress/, media/ and contract/access/people.go.
var streamUsers = map[string][]string{
	"IN":            {"ingress", "dispatcher"},
	"JOBS":          {"dispatcher", "runner"},
	"QUEUE":         {"dispatcher"},
	"TIMERS":        {"dispatcher"},
	"EVENTS":        {"dispatcher", "runner", "egress"},
	"KV_users":      {"dispatcher", "runner"},
	"KV_projects":   {"dispatcher", "runner"},
	"KV_costs":      {"dispatcher"},
	"KV_runners":    {"runner"},
	"KV_workspaces": {"runner"},
	"KV_egress":     {"ingress", "egress"},
	"KV_people":     {"ingress", "dispatcher", "egress"},
	"KV_pairing":    {"dispatcher"},
	"KV_notion":     {"ingress"},
	"OBJ_media":     {"ingress", "runner", "media"},
	"OBJ_snapshots": {"runner"},
}

// Who writes into each bucket, where fewer services write than read.
var bucketWriters = map[string][]string{
	"users":    {"dispatcher"},
	"projects": {"runner"},
	"egress":   {"egress"},
}

// Who may be acting, by where the user is on the path.
var phaseServices = map[string][]string{
	"":        {"ingress"},              // before its ts.in
	"routed":  {"dispatcher"},           // ts.in stored, no job yet
	"running": {"runner"},               // ts.job stored, no done yet
	"done":    {"dispatcher", "egress"}, // done stored
}

// pick narrows the candidates down by the user's phase, when there is a user.
func pick(cands []string, user string, phase map[string]string) string {
	if len(cands) == 1 {
		return cands[0]
	}
	if user != "" {
		p := phase[user]
		var both []string
		for _, c := range cands {
			if slices.Contains(phaseServices[p], c) {
				both = append(both, c)
			}
		}
		if p == "running" && len(both) == 0 && slices.Contains(cands, "dispatcher") {
			both = []string{"dispatcher"} // the dispatcher finishing its routing
		}
		if len(both) > 0 {
			cands = both
		}
	}
	if len(cands) == 0 {
		return "?"
	}
	return strings.Join(cands, "|")
}

// userOf finds a user key (whatsapp.<digits> and the like) in s.
func userOf(s string) string {
	toks := strings.Split(s, ".")
	for i := 0; i+1 < len(toks); i++ {
		switch toks[i] {
		case "whatsapp", "sms", "telegram", "web":
			if toks[i+1] != "" && toks[i+1] != "*" && toks[i+1] != ">" {
				return toks[i] + "." + toks[i+1]
			}
		}
	}
	return ""
}

// pattern replaces users' ids and numbers (sequences, dates) by *.
func pattern(s string) string {
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if i > 0 && (toks[i-1] == "whatsapp" || toks[i-1] == "sms" || toks[i-1] == "telegram" || toks[i-1] == "web") {
			toks[i] = "*"
			continue
		}
		if t != "" && strings.Trim(t, "0123456789-:") == "" {
			toks[i] = "*"
		}
	}
	return strings.Join(toks, ".")
}

func classify(r opRec, phase map[string]string) opKey {
	s := r.subject
	user := userOf(s)
	toks := strings.Split(s, ".")
	if a := strings.Split(r.reply, "."); len(a) >= 4 && a[0] == "$JS" && a[1] == "ACK" {
		// A consumer's delivery: the server sends it to the pull
		// request's inbox, and the tap, subscribed to that inbox too
		// through ">", gets it under the message's own subject.
		return opKey{"server", "deliver", a[2] + "/" + a[3], pattern(s)}
	}
	switch {
	case strings.HasPrefix(s, "ts."):
		return classifyTS(r, toks, user, phase)
	case strings.HasPrefix(s, "$KV.") && len(toks) >= 3:
		bucket := toks[1]
		detail := storeDetail(r)
		cands := bucketWriters[bucket]
		if cands == nil {
			cands = streamUsers["KV_"+bucket]
		}
		return opKey{pick(cands, user, phase), "store", detail, pattern(s)}
	case strings.HasPrefix(s, "$O.") && len(toks) >= 3:
		return opKey{pick(streamUsers["OBJ_"+toks[1]], user, phase), "store", storeDetail(r), "$O." + toks[1] + "." + toks[2] + ".*"}
	case strings.HasPrefix(s, "$JS.ACK.") && len(toks) >= 4:
		detail := "ack"
		switch d := strings.TrimSpace(r.data); {
		case strings.HasPrefix(d, "+WPI"):
			detail = "wpi"
		case strings.HasPrefix(d, "-NAK"):
			detail = "nak"
		case strings.HasPrefix(d, "+TERM"):
			detail = "term"
		case strings.HasPrefix(d, "+NXT"):
			detail = "next"
		}
		if r.reply != "" {
			detail += " sync"
		}
		return opKey{consumerService(toks[2], toks[3]), "ack", detail, "$JS.ACK." + toks[2] + "." + toks[3] + ".>"}
	case strings.HasPrefix(s, "$JS.API."):
		return classifyAPI(r, toks, phase)
	case strings.HasPrefix(s, "$JS.EVENT."):
		return opKey{"server", "advisory", "", pattern(s)}
	case strings.HasPrefix(s, "$JS.FC."):
		return opKey{"?", "other", "flow control", "$JS.FC.>"}
	case strings.HasPrefix(s, "$SRV."):
		return opKey{"ingress", "core", "micro", pattern(s)}
	}
	return opKey{"?", "other", "", pattern(s)}
}

func storeDetail(r opRec) string {
	var d []string
	switch op := r.header.Get("KV-Operation"); op {
	case "DEL":
		d = append(d, "del")
	case "PURGE":
		d = append(d, "purge")
	}
	if r.header.Get("Nats-Expected-Last-Subject-Sequence") != "" || r.header.Get("Nats-Expected-Last-Sequence") != "" {
		d = append(d, "cas")
	}
	if r.header.Get("Nats-Schedule") != "" {
		d = append(d, "schedule")
	}
	if r.reply == "" {
		d = append(d, "no-ack")
	}
	return strings.Join(d, ",")
}

func classifyTS(r opRec, toks []string, user string, phase map[string]string) opKey {
	kind, detail := "store", storeDetail(r)
	var cands []string
	switch toks[1] {
	case "in":
		cands = []string{"ingress"}
		phase[user] = "routed"
	case "job":
		cands = []string{"dispatcher"}
		phase[user] = "running"
	case "queue":
		cands = []string{"dispatcher"}
	case "ctl":
		cands, kind = []string{"dispatcher"}, "core"
	case "svc":
		cands, kind = []string{"runner"}, "core"
	case "timer":
		cands = []string{"dispatcher"}
		if last := toks[len(toks)-1]; last == "expired" || last == "run" {
			cands = []string{"server"}
		}
	case "ev":
		switch toks[len(toks)-1] {
		case "state", "more", "answer", "steer":
			cands = []string{"dispatcher"}
		case "notice":
			cands = []string{"dispatcher", "runner", "ingress"}
		case "started", "progress", "image", "question":
			cands = []string{"runner"}
		case "done":
			cands = []string{"runner"}
			defer func() { phase[user] = "done" }()
		case "delivery", "window":
			cands = []string{"ingress"}
		case "undelivered":
			cands = []string{"egress"}
		}
	}
	if kind == "store" && !streamSubject(toks[1]) {
		kind = "core"
	}
	if cands == nil {
		cands = []string{"?"}
	}
	return opKey{pick(cands, user, phase), kind, detail, pattern(r.subject)}
}

// streamSubject: a stream keeps ts.<kind>.> messages.
func streamSubject(kind string) bool {
	switch kind {
	case "in", "job", "queue", "ev", "timer":
		return true
	}
	return false
}

// consumerService is the service of a durable consumer.
func consumerService(stream, consumer string) string {
	switch {
	case strings.HasPrefix(consumer, "dispatcher"):
		return "dispatcher"
	case consumer == "runner":
		return "runner"
	case strings.HasPrefix(consumer, "egress"):
		return "egress"
	}
	if u := streamUsers[stream]; u != nil {
		return strings.Join(u, "|") // an ordered consumer (a watch, a run's answers)
	}
	return "?"
}

func classifyAPI(r opRec, toks []string, phase map[string]string) opKey {
	// toks: $JS API <group> <op> …
	rest := toks[2:]
	at := func(i int) string {
		if i < len(rest) {
			return rest[i]
		}
		return ""
	}
	var req struct {
		LastBySubj string `json:"last_by_subj"`
		Seq        uint64 `json:"seq"`
		NextBySubj string `json:"next_by_subj"`
	}
	switch {
	case at(0) == "DIRECT" && at(1) == "GET":
		stream := at(2)
		user := userOf(r.subject)
		var what string
		if len(rest) > 3 {
			what = pattern(strings.Join(rest[3:], "."))
		} else if json.Unmarshal([]byte(r.data), &req) == nil {
			what = describeGet(req.LastBySubj, req.NextBySubj, req.Seq)
			user = cmp.Or(user, userOf(req.LastBySubj), userOf(req.NextBySubj))
		}
		return opKey{pick(streamUsers[stream], user, phase), "read", "direct get", "$JS.API.DIRECT.GET." + stream + " " + what}
	case at(0) == "STREAM" && at(1) == "MSG" && at(2) == "GET":
		stream := at(3)
		var user, what string
		if json.Unmarshal([]byte(r.data), &req) == nil {
			what = describeGet(req.LastBySubj, req.NextBySubj, req.Seq)
			user = cmp.Or(userOf(req.LastBySubj), userOf(req.NextBySubj))
		}
		return opKey{pick(streamUsers[stream], user, phase), "read", "msg get", "$JS.API.STREAM.MSG.GET." + stream + " " + what}
	case at(0) == "CONSUMER" && at(1) == "MSG" && at(2) == "NEXT":
		return opKey{consumerService(at(3), at(4)), "pull", "", "$JS.API.CONSUMER.MSG.NEXT." + at(3) + "." + at(4)}
	case at(0) == "STREAM" && at(1) == "INFO", at(0) == "CONSUMER" && at(1) == "INFO":
		stream := at(2)
		svc := pick(streamUsers[stream], "", phase)
		if at(0) == "CONSUMER" && at(3) != "" {
			svc = consumerService(stream, at(3))
		}
		return opKey{svc, "read", "info", pattern(r.subject)}
	case at(0) == "INFO", at(0) == "STREAM" && (at(1) == "NAMES" || at(1) == "LIST"):
		return opKey{"?", "read", "info", r.subject}
	case at(0) == "CONSUMER" && (at(1) == "CREATE" || at(1) == "DURABLE"):
		stream := at(2)
		if at(1) == "DURABLE" {
			stream = at(3)
		}
		if strings.HasPrefix(stream, "KV_") || strings.HasPrefix(stream, "OBJ_") {
			return opKey{pick(streamUsers[stream], "", phase), "read", "watch", "$JS.API.CONSUMER.CREATE." + stream + ".*"}
		}
		user := userOf(r.subject)
		return opKey{pick(streamUsers[stream], user, phase), "other", "consumer create", "$JS.API.CONSUMER.CREATE." + stream + ".*"}
	}
	stream := ""
	switch {
	case at(0) == "STREAM" && len(rest) > 2:
		stream = rest[len(rest)-1]
		if at(1) == "MSG" && len(rest) > 3 {
			stream = at(3)
		}
	case at(0) == "CONSUMER" && len(rest) > 2:
		stream = at(2)
	}
	return opKey{pick(streamUsers[stream], userOf(r.subject), phase), "other", "", pattern(r.subject)}
}

func describeGet(last, next string, seq uint64) string {
	switch {
	case last != "":
		return "last_by_subj " + pattern(last)
	case next != "":
		return "next_by_subj " + pattern(next)
	case seq != 0:
		return "seq"
	}
	return ""
}

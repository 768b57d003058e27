package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/cmd/internal/app"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// natsUsers is a NATS server run from the repository's nats.conf, as
// compose.yaml runs it: one user per service, allowed only its own
// subjects, and admin, which provisioned it with `textslash provision`.
type natsUsers struct {
	*natstest.Server
	passwords map[string]string // by user
}

// runNATSUsers starts the server with fresh passwords and provisions it.
func runNATSUsers(t *testing.T) *natsUsers {
	t.Helper()
	n := startNATSUsers(t)
	if err := n.provision(); err != nil {
		t.Fatal(err)
	}
	return n
}

// startNATSUsers starts the server with fresh passwords.
func startNATSUsers(t *testing.T) *natsUsers {
	t.Helper()
	n := &natsUsers{passwords: map[string]string{}}
	for _, user := range natsConfUsers(t) {
		n.passwords[user] = "pw-" + user + "-" + fmt.Sprint(time.Now().UnixNano())
		t.Setenv(passwordVar(user), n.passwords[user])
	}
	n.Server = natstest.RunConfig(t, "../../nats.conf", nats.UserInfo("admin", n.passwords["admin"]))
	return n
}

// natsConfUsers are the users of the repository's nats.conf, in order:
// admin, the services', the plug-in channels' (channel-<name>).
func natsConfUsers(t *testing.T) []string {
	t.Helper()
	conf, err := os.ReadFile("../../nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, m := range regexp.MustCompile(`(?m)^\s+\{?\s*user: ([\w-]+), password: \$(NATS_\w+_PASSWORD)`).FindAllSubmatch(conf, -1) {
		if passwordVar(string(m[1])) != string(m[2]) {
			t.Errorf("nats.conf: user %s has the password %s; want %s", m[1], m[2], passwordVar(string(m[1])))
		}
		users = append(users, string(m[1]))
	}
	return users
}

// passwordVar is the variable holding a NATS user's password:
// NATS_CHANNEL_DISCORD_PASSWORD for channel-discord.
func passwordVar(user string) string {
	return "NATS_" + strings.ToUpper(strings.ReplaceAll(user, "-", "_")) + "_PASSWORD"
}

// provision runs `textslash provision` as admin, as compose.yaml does.
func (n *natsUsers) provision() error {
	cmd := exec.Command(binary, "provision")
	cmd.Env = append(n.env("admin"), "PATH=/usr/bin:/bin")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("textslash provision: %v\n%s", err, out)
	}
	return nil
}

// A service started before textslash provision waits for its streams,
// saying so, and is ready once they are there.
func TestServiceWaitsForProvision(t *testing.T) {
	n := startNATSUsers(t)
	buildServices(t)
	provisioned := make(chan error, 1)
	go func() {
		// A real second: the service starts meanwhile and must be
		// found waiting for the streams, not finding them.
		time.Sleep(time.Second)
		provisioned <- n.provision()
	}()
	m := startService(t, app.Media, append(n.env(app.Media), "TEXTSLASH_MEDIA_KEY=a-key-of-16-chars-or-more")...)
	if err := <-provisioned; err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(m.Log)
	if !strings.Contains(string(log), "waiting for the streams: run textslash provision") {
		t.Errorf("the log does not say what the service waits for:\n%s", tail(string(log), 2000))
	}
}

// env is how a service of its own reaches the server as user.
func (n *natsUsers) env(user string) []string {
	return []string{"NATS_URL=" + n.ClientURL(), "NATS_USER=" + user, "NATS_PASSWORD=" + n.passwords[user]}
}

// adminURL is the server's URL with admin's login, for tests that read
// every stream.
func (n *natsUsers) adminURL() string {
	u, _ := url.Parse(n.ClientURL())
	u.User = url.UserPassword("admin", n.passwords["admin"])
	return u.String()
}

// connect logs in as user, with its inbox prefix as textslash's programs
// take it; refusals the server sends arrive on errs.
func (n *natsUsers) connect(t *testing.T, user string) (jetstream.JetStream, <-chan error) {
	t.Helper()
	errs := make(chan error, 16)
	nc, err := nats.Connect(n.ClientURL(), nats.UserInfo(user, n.passwords[user]), nats.CustomInboxPrefix(app.InboxPrefix(user)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js, errs
}

// violations is what the server logged about refusing clients.
func (n *natsUsers) violations() []string {
	var v []string
	for _, line := range n.Errors() {
		if strings.Contains(line, "Violation") {
			v = append(v, line)
		}
	}
	return v
}

// Each service's NATS user is refused what is not its own: ingress cannot
// read events, the runner cannot publish inbound messages, egress cannot
// touch jobs, and none of them can change a stream.
func TestNATSPermissions(t *testing.T) {
	n := runNATSUsers(t)
	u, _ := contract.NewUser(contract.ChannelWeb, "perm")

	for _, tt := range append([]attempt{
		{app.Ingress, "subscribe to events", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().SubscribeSync(contract.UserEvents(u))
			return err
		}},
		{app.Ingress, "read events through a consumer", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.OrderedConsumer(ctx, contract.StreamEvents, jetstream.OrderedConsumerConfig{})
			return err
		}},
		{app.Ingress, "read a job", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Consumer(ctx, contract.StreamJobs, contract.ConsumerRunner)
			return err
		}},
		{app.Runner, "publish an inbound message", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, contract.InboundSubject(u), []byte(`{}`))
			return err
		}},
		{app.Runner, "write the users' state", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV.users."+u.Key(), []byte(`{}`))
			return err
		}},
		{app.Runner, "read the dispatcher's done events", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Consumer(ctx, contract.StreamEvents, contract.ConsumerDispatcherDone)
			return err
		}},
		{app.Runner, "pull from egress's consumer", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().Request("$JS.API.CONSUMER.MSG.NEXT.EVENTS.egress-whatsapp", []byte(`{"batch":1}`), time.Second)
			return err
		}},
		{app.Runner, "rewrite the web chat's egress consumer", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.CreateOrUpdateConsumer(ctx, contract.StreamEvents, jetstream.ConsumerConfig{Durable: "egress-web",
				FilterSubjects: []string{contract.EventSubject(u, contract.KindDone), contract.EventSubject(u, contract.KindNotice)}})
			return err
		}},
		{app.Runner, "rewrite Notion's egress consumer to steers only", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.CreateOrUpdateConsumer(ctx, contract.StreamEvents, jetstream.ConsumerConfig{Durable: "egress-notion",
				FilterSubject: contract.EventSubject(u, contract.KindSteer)})
			return err
		}},
		{app.Runner, "answer its own question", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, contract.EventSubject(u, contract.KindAnswer), []byte(`{}`))
			return err
		}},
		{app.Runner, "read the replies to everybody's requests", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().SubscribeSync("_INBOX.>")
			return err
		}},
		{app.Runner, "read the dispatcher's replies", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().SubscribeSync("_INBOX_dispatcher.>")
			return err
		}},
		{app.Ingress, "read the replies to everybody's requests", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().SubscribeSync("_INBOX.>")
			return err
		}},
		{app.Ingress, "pair in a web chat user", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV.people.web.intruder", []byte(`{}`))
			return err
		}},
		{app.Ingress, "put a key of the people bucket no person has", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV.people.admin", []byte(`{}`))
			return err
		}},
		{app.Ingress, "put a key of the pairing bucket pairing does not use", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV.pairing.other", []byte(`{}`))
			return err
		}},
		{app.Egress, "publish a job", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, contract.JobSubject(u), []byte(`{}`))
			return err
		}},
		{app.Egress, "look up the jobs", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Stream(ctx, contract.StreamJobs)
			return err
		}},
		{app.Egress, "read the images", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.ObjectStore(ctx, contract.BucketMedia)
			return err
		}},
		{app.Egress, "subscribe to cancels", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().SubscribeSync(contract.AllCancels)
			return err
		}},
		{app.Media, "publish an event", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, contract.EventSubject(u, contract.KindDone), []byte(`{}`))
			return err
		}},
		{app.Dispatcher, "delete a stream", func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteStream(ctx, contract.StreamEvents)
		}},
		{"channel-slack", "publish another channel's inbound message", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, contract.InboundSubject(u), []byte(`{}`))
			return err
		}},
		{"channel-slack", "pull from another channel's egress consumer", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().Request("$JS.API.CONSUMER.MSG.NEXT.EVENTS.egress-telegram", []byte(`{"batch":1}`), time.Second)
			return err
		}},
		{"channel-slack", "pair in a person of another channel", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Publish(ctx, "$KV.people.telegram.42", []byte(`{}`))
			return err
		}},
		{"channel-slack", "read a job", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Consumer(ctx, contract.StreamJobs, contract.ConsumerRunner)
			return err
		}},
		{app.Runner, "pull from the Slack channel's consumer", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.Conn().Request("$JS.API.CONSUMER.MSG.NEXT.EVENTS.egress-slack", []byte(`{"batch":1}`), time.Second)
			return err
		}},
	}, channelAttempts(t, u)...) {
		t.Run(tt.user+" cannot "+tt.what, func(t *testing.T) {
			before := len(n.violations())
			js, errs := n.connect(t, tt.user)
			// Refused, a JetStream request goes unanswered.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := tt.try(ctx, js)
			if err == nil {
				// A refused subscription or publish is reported apart
				// from the call.
				select {
				case err = <-errs:
				case <-time.After(2 * time.Second):
				}
			}
			if err == nil {
				t.Fatal("allowed")
			}
			if !errors.Is(err, nats.ErrPermissionViolation) && !errors.Is(err, context.DeadlineExceeded) &&
				!errors.Is(err, nats.ErrTimeout) && !errors.Is(err, nats.ErrNoResponders) {
				t.Errorf("error %v; want a permission violation or no answer", err)
			}
			natstest.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
				v := n.violations()
				if len(v) == before {
					return errors.New("the server logged no violation")
				}
				if !strings.Contains(v[before], "/user:"+tt.user+`"`) {
					return fmt.Errorf("violation of another user: %s", v[before])
				}
				return nil
			})
		})
	}
}

// attempt is something a NATS user must be refused.
type attempt struct {
	user, what string
	try        func(ctx context.Context, js jetstream.JetStream) error
}

// channelAttempts are what a channel's login was found doing to other
// channels' people, run as every channel user of nats.conf (and, for
// pairing codes, as ingress too): reading another channel's replies by a
// message get, re-filtering its own durable to every channel's events,
// listing, minting or reading pairing codes, pairing anyone in, reading
// or writing the built-in channels' media, listing who wrote.
func channelAttempts(t *testing.T, victim contract.User) []attempt {
	var out []attempt
	apiRequest := func(subject, body string) func(ctx context.Context, js jetstream.JetStream) error {
		return func(ctx context.Context, js jetstream.JetStream) error {
			m, err := js.Conn().RequestWithContext(ctx, subject, []byte(body))
			if err == nil && strings.Contains(string(m.Data), `"error"`) {
				return nil // refused by JetStream, not by the permissions: the test wants the latter
			}
			return err
		}
	}
	publish := func(subject string) func(ctx context.Context, js jetstream.JetStream) error {
		return func(ctx context.Context, js jetstream.JetStream) error {
			if err := js.Conn().Publish(subject, []byte(`{}`)); err != nil {
				return err
			}
			return js.Conn().FlushWithContext(ctx)
		}
	}
	pairing := []attempt{
		{"", "list the pending pairing codes", apiRequest("$JS.API.STREAM.INFO.KV_pairing", `{"subjects_filter":">"}`)},
		{"", "mint a pairing code", publish("$KV.pairing.code.ABCDEF")},
		{"", "read the newest pairing code with a literal *", apiRequest("$JS.API.DIRECT.GET.KV_pairing.$KV.pairing.code.*", ``)},
		{"", "pair a person in", publish("$KV.people." + contract.PersonKey(victim))},
	}
	for _, a := range pairing {
		a.user = app.Ingress
		out = append(out, a)
	}
	for _, user := range natsConfUsers(t) {
		name, ok := strings.CutPrefix(user, "channel-")
		if !ok {
			continue
		}
		own := "egress-" + name
		for _, a := range append([]attempt{
			{"", "read another channel's reply by a message get", apiRequest("$JS.API.STREAM.MSG.GET.EVENTS",
				`{"last_by_subj":"`+contract.EventSubject(victim, contract.KindDone)+`"}`)},
			{"", "re-filter its durable to every channel's events", apiRequest("$JS.API.CONSUMER.CREATE.EVENTS."+own,
				`{"stream_name":"EVENTS","config":{"durable_name":"`+own+`","filter_subject":"ts.ev.>","ack_policy":"explicit"}}`)},
			{"", "read another channel's event by a direct get", apiRequest("$JS.API.DIRECT.GET.EVENTS."+contract.EventSubject(victim, contract.KindDone), ``)},
			{"", "list who wrote", apiRequest("$JS.API.STREAM.INFO.IN", `{"subjects_filter":">"}`)},
			{"", "list whom egress wrote to", apiRequest("$JS.API.STREAM.INFO.KV_egress", `{"subjects_filter":">"}`)},
			{"", "mark another channel's message sent", publish("$KV.egress.sent." + victim.Key() + ".1.0")},
			{"", "read whether another channel's person is paired", apiRequest("$JS.API.DIRECT.GET.KV_people.$KV.people."+contract.PersonKey(victim), ``)},
			{"", "watch every channel's people", apiRequest("$JS.API.CONSUMER.CREATE.KV_people.w.$KV.people.>",
				`{"stream_name":"KV_people","config":{"name":"w","filter_subject":"$KV.people.>","ack_policy":"none"}}`)},
			{"", "write an image into the built-in channels' media", publish("$O.media.M.aW1hZ2U")},
			{"", "read the built-in channels' newest image with a literal *", apiRequest("$JS.API.DIRECT.GET.OBJ_media.$O.media.M.*", ``)},
			{"", "list the built-in channels' media", apiRequest("$JS.API.STREAM.INFO.OBJ_media", `{"subjects_filter":">"}`)},
		}, pairing...) {
			a.user = user
			out = append(out, a)
		}
	}
	return out
}

// The runner reads a person's answers and added messages, which the
// dispatcher publishes, with an ordered consumer of its own.
func TestNATSRunnerReadsAnswers(t *testing.T) {
	n := runNATSUsers(t)
	u, _ := contract.NewUser(contract.ChannelWeb, "perm")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	disp, _ := n.connect(t, app.Dispatcher)
	run, _ := n.connect(t, app.Runner)
	before := len(n.violations())
	for _, kind := range []contract.EventKind{contract.KindAnswer, contract.KindSteer} {
		ev := contract.Event{Kind: kind, User: u, JobID: "j1", Question: 1, Answer: contract.AnswerAllow, Text: "btw"}
		if err := bus.PublishEvent(ctx, disp, ev, contract.MsgID(u, "j1", string(kind))); err != nil {
			t.Fatalf("dispatcher publishes %s: %v", kind, err)
		}
	}
	cons, err := run.OrderedConsumer(ctx, contract.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contract.EventSubject(u, contract.KindAnswer), contract.EventSubject(u, contract.KindSteer)},
	})
	if err != nil {
		t.Fatalf("runner's ordered consumer: %v", err)
	}
	for _, want := range []string{"answer", "steer"} {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatalf("runner reads the %s: %v", want, err)
		}
		if !strings.HasSuffix(m.Subject(), "."+want) {
			t.Errorf("read %s; want the %s", m.Subject(), want)
		}
	}
	// A run's end reads the messages added to it alone: one filter, which
	// goes in the create request's subject.
	steers, err := run.OrderedConsumer(ctx, contract.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contract.EventSubject(u, contract.KindSteer)},
	})
	if err != nil {
		t.Fatalf("runner's ordered consumer of steers: %v", err)
	}
	if m, err := steers.Next(jetstream.FetchContext(ctx)); err != nil || !strings.HasSuffix(m.Subject(), ".steer") {
		t.Errorf("runner reads the steers: %v", err)
	}
	if v := n.violations(); len(v) > before {
		t.Errorf("violations: %q", v[before:])
	}
}

// Ingress and each plug-in channel, with nothing more than their own
// logins, pair a stranger in with a code the dispatcher made (asking the
// dispatcher's pairing service, logged in as dispatcher) and see them
// among the people paired in; a channel sees its own people only.
func TestNATSChannelsPair(t *testing.T) {
	n := runNATSUsers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	disp, _ := n.connect(t, app.Dispatcher)
	before := len(n.violations())
	dp, err := access.OpenPairing(ctx, disp)
	if err != nil {
		t.Fatal(err)
	}
	go access.ServePairing(ctx, disp.Conn(), dp, zerolog.Nop())
	type pairer struct {
		login string
		allow *access.Allowlist
		u     contract.User
	}
	pairers := []pairer{
		{app.Ingress, access.NewAllowlist(nil, nil), contract.User{Channel: contract.ChannelWhatsApp, ID: "15551230000"}},
		{app.Ingress, access.NewAllowlist(nil, nil), contract.User{Channel: contract.ChannelTelegram, ID: "-1001234"}},
	}
	for _, user := range natsConfUsers(t) {
		if name, ok := strings.CutPrefix(user, "channel-"); ok {
			pairers = append(pairers, pairer{user, access.NewChannelAllowlist(name, nil), contract.User{Channel: name, ID: "U1"}})
		}
	}
	for _, p := range pairers {
		js, _ := n.connect(t, p.login)
		if err := p.allow.Open(ctx, js); err != nil {
			t.Fatalf("%s follows the people: %v", p.login, err)
		}
		natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
			// A well-formed code nobody issued: one that is not a code
			// ("WRONG2": no O in the alphabet) is refused without asking,
			// and the wait passed before the service was up.
			_, err := p.allow.Redeem(ctx, p.u, "WRNGX2")
			return err // no responders until the service is up
		})
		code, err := dp.NewCode(ctx, "web.operator")
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := p.allow.Redeem(ctx, p.u, code); !ok || err != nil {
			t.Fatalf("%s redeems the code for %s: %v, %v; want true, nil", p.login, p.u.Key(), ok, err)
		}
		natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			if !p.allow.Allows(p.u) {
				return fmt.Errorf("%s not among the people %s follows", p.u.Key(), p.login)
			}
			return nil
		})
	}
	// The first channel's login sees none of the others' people.
	for _, p := range pairers {
		if last := pairers[len(pairers)-1]; p.u.Channel != last.u.Channel && last.allow.Allows(p.u) {
			t.Errorf("%s sees %s paired in", last.login, p.u.Key())
		}
	}
	if v := n.violations(); len(v) > before {
		t.Errorf("violations: %q", v[before:])
	}
}

package contract_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

func mustUser(t testing.TB, channel, id string) contract.User {
	t.Helper()
	u, err := contract.NewUser(channel, id)
	if err != nil {
		t.Fatalf("NewUser(%q, %q): %v", channel, id, err)
	}
	return u
}

func TestSubjects(t *testing.T) {
	u := mustUser(t, contract.ChannelWhatsApp, "p_15551234567")
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"inbound", contract.InboundSubject(u), "ts.in.whatsapp.p_15551234567"},
		{"job", contract.JobSubject(u), "ts.job.whatsapp.p_15551234567"},
		{"queue", contract.QueueSubject(u), "ts.queue.whatsapp.p_15551234567"},
		{"event done", contract.EventSubject(u, contract.KindDone), "ts.ev.whatsapp.p_15551234567.done"},
		{"event notice", contract.EventSubject(u, contract.KindNotice), "ts.ev.whatsapp.p_15551234567.notice"},
		{"channel events", contract.ChannelEvents("web"), "ts.ev.web.>"},
		{"user events", contract.UserEvents(u), "ts.ev.whatsapp.p_15551234567.>"},
		{"all done events", contract.AllEvents(contract.KindDone), "ts.ev.*.*.done"},
		{"key", u.Key(), "whatsapp.p_15551234567"},
		{"string", u.String(), "whatsapp.p_15551234567"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q; want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestUserFromSubjectRoundTrip(t *testing.T) {
	users := []contract.User{
		mustUser(t, "web", "a"),
		mustUser(t, "sms", "15551234567"),
		mustUser(t, "telegram", "-100123"),
		mustUser(t, "x_Y-z", strings.Repeat("Z", 64)),
	}
	for _, u := range users {
		for _, subject := range []string{
			contract.InboundSubject(u),
			contract.JobSubject(u),
			contract.QueueSubject(u),
			contract.EventSubject(u, contract.KindDone),
			contract.EventSubject(u, contract.KindProgress),
		} {
			got, err := contract.UserFromSubject(subject)
			if err != nil {
				t.Errorf("UserFromSubject(%q): %v", subject, err)
				continue
			}
			if got != u {
				t.Errorf("UserFromSubject(%q): got %+v; want %+v", subject, got, u)
			}
		}
	}
}

func TestUserFromSubjectRejects(t *testing.T) {
	for _, subject := range []string{
		"",
		"ts",
		"ts.in.web",
		"ts.in.web.",
		"xs.in.web.abc",
		"ts.in.web.a*",
		"ts.in.>.abc",
		"ts.in..abc",
		"TS.in.web.abc",
	} {
		u, err := contract.UserFromSubject(subject)
		if !errors.Is(err, contract.ErrInvalidUser) {
			t.Errorf("UserFromSubject(%q): got %+v, %v; want ErrInvalidUser", subject, u, err)
		}
	}
}

func TestNewUser(t *testing.T) {
	tests := []struct {
		channel, id string
		ok          bool
	}{
		{"web", "abc", true},
		{"whatsapp", "15551234567", true},
		{"telegram", "-100123_x", true},
		{"sms", strings.Repeat("a", 64), true},
		{"sms", "A", true},
		{"web", "", false},
		{"", "abc", false},
		{"web", "a.b", false},
		{"we.b", "abc", false},
		{"web", "a*", false},
		{"web", "*", false},
		{"web", ">", false},
		{"web", "a>", false},
		{"web", "a b", false},
		{"web", " abc", false},
		{"web", "abc\n", false},
		{"web", "abc\x00", false},
		{"web", strings.Repeat("a", 65), false},
		{strings.Repeat("c", 65), "abc", false},
		{"web", "héllo", false},
		{"web", "日本", false},
		{"web", "a/b", false},
		{"web", "..", false},
	}
	for _, tt := range tests {
		u, err := contract.NewUser(tt.channel, tt.id)
		if tt.ok {
			if err != nil {
				t.Errorf("NewUser(%q, %q): got %v; want no error", tt.channel, tt.id, err)
			}
			if u.Channel != tt.channel || u.ID != tt.id {
				t.Errorf("NewUser(%q, %q): got %+v", tt.channel, tt.id, u)
			}
			continue
		}
		if !errors.Is(err, contract.ErrInvalidUser) {
			t.Errorf("NewUser(%q, %q): got %v; want ErrInvalidUser", tt.channel, tt.id, err)
		}
		if !bus.IsPermanent(err) {
			t.Errorf("NewUser(%q, %q): IsPermanent(%v) = false; want true", tt.channel, tt.id, err)
		}
	}
}

func TestEncodeStampsVersion(t *testing.T) {
	u := mustUser(t, "web", "abc")
	encoders := []struct {
		name   string
		encode func() ([]byte, error)
	}{
		{"inbound", func() ([]byte, error) { return contract.Encode(&contract.Inbound{V: 7, ID: "m1", User: u, Text: "hi"}) }},
		{"job", func() ([]byte, error) { return contract.Encode(&contract.Job{ID: "m1", User: u}) }},
		{"event", func() ([]byte, error) {
			return contract.Encode(&contract.Event{V: 0, Kind: contract.KindDone, User: u})
		}},
		{"state", func() ([]byte, error) { return contract.Encode(&contract.UserState{V: 2, State: contract.StateIdle}) }},
	}
	for _, tt := range encoders {
		data, err := tt.encode()
		if err != nil {
			t.Errorf("%s: Encode: %v", tt.name, err)
			continue
		}
		var v struct {
			V *int `json:"v"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Errorf("%s: %s is not JSON: %v", tt.name, data, err)
			continue
		}
		if v.V == nil || *v.V != contract.Version || contract.Version != 1 {
			t.Errorf("%s: got %s; want \"v\":1", tt.name, data)
		}
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		data string
		want error
	}{
		{"current", `{"v":1,"id":"m1","user":{"channel":"web","id":"abc"},"text":"hi"}`, nil},
		{"unversioned", `{"id":"m1","user":{"channel":"web","id":"abc"}}`, nil},
		{"no id", `{"v":1,"user":{"channel":"web","id":"abc"},"text":"hi"}`, contract.ErrInvalidPayload},
		{"no user", `{"v":1,"id":"m1","text":"hi"}`, contract.ErrInvalidPayload},
		{"bad user", `{"v":1,"id":"m1","user":{"channel":"web","id":"a.b"}}`, contract.ErrInvalidPayload},
		{"newer", `{"v":2,"id":"m1","user":{"channel":"web","id":"abc"},"text":"hi"}`, contract.ErrVersion},
		{"much newer", `{"v":99}`, contract.ErrVersion},
		{"junk", `not json`, contract.ErrInvalidPayload},
		{"empty", ``, contract.ErrInvalidPayload},
		{"wrong type", `{"v":"1"}`, contract.ErrInvalidPayload},
		{"array", `[1,2]`, contract.ErrInvalidPayload},
		{"truncated", `{"v":1,"id":"m`, contract.ErrInvalidPayload},
	}
	for _, tt := range tests {
		var in contract.Inbound
		err := contract.Decode([]byte(tt.data), &in)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: Decode(%q): got %v; want nil", tt.name, tt.data, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Decode(%q): got %v; want %v", tt.name, tt.data, err, tt.want)
		}
		if !bus.IsPermanent(err) {
			t.Errorf("%s: IsPermanent(%v) = false; want true", tt.name, err)
		}
	}

	// Round trip through Encode for every payload type.
	u := mustUser(t, "sms", "15551234567")
	at := time.Date(2026, 11, 22, 3, 4, 5, 0, time.UTC)
	ev := contract.Event{Kind: contract.KindDone, User: u, JobID: "m1", At: at, Text: "ok", Status: contract.StatusOK,
		Images: []contract.Image{{ID: "x", ContentType: "image/png", Size: 3}}, DurationMS: 12}
	data, err := contract.Encode(&ev)
	if err != nil {
		t.Fatal(err)
	}
	var got contract.Event
	if err := contract.Decode(data, &got); err != nil {
		t.Fatalf("Decode(Encode(event)): %v", err)
	}
	ev.V = contract.Version
	if fmt.Sprint(got) != fmt.Sprint(ev) {
		t.Errorf("event round trip: got %+v; want %+v", got, ev)
	}
	var st contract.UserState
	if err := contract.Decode([]byte(`{"v":2,"state":"idle"}`), &st); !errors.Is(err, contract.ErrVersion) {
		t.Errorf("Decode state v2: got %v; want ErrVersion", err)
	}
	var job contract.Job
	if err := contract.Decode([]byte(`{"v":3}`), &job); !errors.Is(err, contract.ErrVersion) {
		t.Errorf("Decode job v3: got %v; want ErrVersion", err)
	}
}

func TestIsPermanent(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("timeout"), false},
		{context.DeadlineExceeded, false},
		{jetstream.ErrMsgNotFound, false},
		{contract.ErrInvalidPayload, true},
		{contract.ErrVersion, true},
		{contract.ErrInvalidUser, true},
		{fmt.Errorf("state of x: %w", contract.ErrVersion), true},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", contract.ErrInvalidPayload)), true},
		{errors.Join(errors.New("x"), contract.ErrInvalidUser), true},
		{fmt.Errorf("not wrapped: %v", contract.ErrInvalidPayload), false},
	}
	for _, tt := range tests {
		if got := bus.IsPermanent(tt.err); got != tt.want {
			t.Errorf("IsPermanent(%v): got %v; want %v", tt.err, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		delivered uint64
		want      time.Duration
	}{
		{0, time.Second},
		{1, time.Second},
		{2, 2 * time.Second},
		{3, 4 * time.Second},
		{4, 8 * time.Second},
		{5, 16 * time.Second},
		{6, 30 * time.Second},
		{7, 30 * time.Second},
		{100, 30 * time.Second},
		{1<<64 - 1, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := bus.Backoff(tt.delivered); got != tt.want {
			t.Errorf("Backoff(%d): got %v; want %v", tt.delivered, got, tt.want)
		}
	}
	for n := uint64(1); n < 50; n++ {
		if a, b := bus.Backoff(n), bus.Backoff(n+1); b < a {
			t.Errorf("Backoff(%d) = %v > Backoff(%d) = %v; want non-decreasing", n, a, n+1, b)
		}
	}
}

// mediaNameRE is the name media serves (media.nameRE): a path MediaPath
// builds must match it, or images are unreachable.
var mediaNameRE = regexp.MustCompile(`^/images/[A-Za-z0-9]{16,64}\.(jpeg|png)$`)

func TestMediaPath(t *testing.T) {
	tests := []struct {
		img  contract.Image
		want string
	}{
		{contract.Image{ID: "ABCDEFGHIJKLMNOPQRSTUV", ContentType: "image/jpeg"}, "/images/ABCDEFGHIJKLMNOPQRSTUV.jpeg"},
		{contract.Image{ID: "ABCDEFGHIJKLMNOPQRSTUV", ContentType: "image/png"}, "/images/ABCDEFGHIJKLMNOPQRSTUV.png"},
	}
	for _, tt := range tests {
		if got := contract.MediaPath(tt.img); got != tt.want {
			t.Errorf("MediaPath(%+v): got %q; want %q", tt.img, got, tt.want)
		}
	}
}

func TestMediaSigner(t *testing.T) {
	s, err := contract.NewMediaSigner([]byte("0123456789abcdef"), 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := contract.NewMediaSigner([]byte("fedcba9876543210"), 30*time.Minute)
	img := contract.Image{ID: "ABCDEFGHIJKLMNOPQRSTUV", ContentType: "image/jpeg"}
	now := time.Unix(1_800_000_000, 0)
	signed := s.URL(img, now)
	path, query, _ := strings.Cut(signed, "?")
	q, err := url.ParseQuery(query)
	if err != nil || path != contract.MediaPath(img) {
		t.Fatalf("URL %q", signed)
	}
	e, sig := q.Get("e"), q.Get("s")
	flip := []byte(sig)
	flip[3] ^= 1
	tests := []struct {
		name         string
		signer       contract.MediaSigner
		path, e, sig string
		at           time.Time
		ok           bool
	}{
		{"as signed", s, path, e, sig, now, true},
		{"just before expiry", s, path, e, sig, now.Add(30 * time.Minute), true},
		{"expired", s, path, e, sig, now.Add(30*time.Minute + time.Second), false},
		{"expiry moved", s, path, strconv.FormatInt(now.Add(time.Hour).Unix(), 10), sig, now, false},
		{"another image", s, "/images/ABCDEFGHIJKLMNOPQRSTUW.jpeg", e, sig, now, false},
		{"another type", s, "/images/ABCDEFGHIJKLMNOPQRSTUV.png", e, sig, now, false},
		{"signature changed", s, path, e, string(flip), now, false},
		{"another key", other, path, e, sig, now, false},
		{"no signature", s, path, e, "", now, false},
		{"no expiry", s, path, "", sig, now, false},
	}
	for _, tt := range tests {
		if err := tt.signer.Check(tt.path, tt.e, tt.sig, tt.at); (err == nil) != tt.ok {
			t.Errorf("%s: Check = %v; want ok %t", tt.name, err, tt.ok)
		}
	}
	if _, err := contract.NewMediaSigner([]byte("short"), 0); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}

func TestMsgID(t *testing.T) {
	u := mustUser(t, "web", "abc")
	v := mustUser(t, "web", "abd")
	tests := []struct {
		got, want string
	}{
		{contract.MsgID(u, "m1"), "web.abc:m1"},
		{contract.MsgID(u, "m1", "job"), "web.abc:m1:job"},
		{contract.MsgID(u, "m1", "state", "working"), "web.abc:m1:state:working"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("MsgID: got %q; want %q", tt.got, tt.want)
		}
	}
	// Distinct users, ids and parts give distinct ids.
	ids := []string{
		contract.MsgID(u, "m1"), contract.MsgID(v, "m1"), contract.MsgID(u, "m2"),
		contract.MsgID(u, "m1", "job"), contract.MsgID(u, "m1", "notice"), contract.MsgID(u, "m1", "state", "idle"),
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("MsgID %q made twice", id)
		}
		seen[id] = true
	}
}

// provisioned starts an embedded JetStream server and provisions it.
func provisioned(t *testing.T) *natstest.Server {
	t.Helper()
	s := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), s.JS, bus.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return s
}

func TestProvisionIdempotent(t *testing.T) {
	s := provisioned(t)
	ctx := t.Context()
	for i := range 2 {
		if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
			t.Fatalf("Provision again (%d): %v", i+2, err)
		}
	}
	var names []string
	for name := range s.JS.StreamNames(ctx).Name() {
		names = append(names, name)
	}
	for _, cfg := range bus.Streams(bus.Options{}) {
		st, err := s.JS.Stream(ctx, cfg.Name)
		if err != nil {
			t.Errorf("stream %s: %v (streams: %v)", cfg.Name, err, names)
			continue
		}
		got := st.CachedInfo().Config
		if fmt.Sprint(got.Subjects) != fmt.Sprint(cfg.Subjects) || got.Retention != cfg.Retention || got.Duplicates != cfg.Duplicates {
			t.Errorf("stream %s: got subjects %v retention %v duplicates %v; want %v %v %v", cfg.Name,
				got.Subjects, got.Retention, got.Duplicates, cfg.Subjects, cfg.Retention, cfg.Duplicates)
		}
		if got.Duplicates != contract.DedupWindow {
			t.Errorf("stream %s: got Duplicates %v; want %v", cfg.Name, got.Duplicates, contract.DedupWindow)
		}
	}
	for stream, cfgs := range bus.Consumers() {
		for _, cfg := range cfgs {
			c, err := s.JS.Consumer(ctx, stream, cfg.Durable)
			if err != nil {
				t.Errorf("consumer %s on %s: %v", cfg.Durable, stream, err)
				continue
			}
			got := c.CachedInfo().Config
			if got.FilterSubject != cfg.FilterSubject || got.AckPolicy != jetstream.AckExplicitPolicy || got.AckWait != cfg.AckWait {
				t.Errorf("consumer %s: got filter %q ack %v wait %v; want %q explicit %v", cfg.Durable,
					got.FilterSubject, got.AckPolicy, got.AckWait, cfg.FilterSubject, cfg.AckWait)
			}
		}
	}
	if _, err := s.JS.KeyValue(ctx, contract.BucketUsers); err != nil {
		t.Errorf("bucket %s: %v", contract.BucketUsers, err)
	}
}

func TestQueueLimitPerSubject(t *testing.T) {
	s := provisioned(t)
	ctx := t.Context()
	st, err := s.JS.Stream(ctx, contract.StreamQueue)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxMsgsPerSubject != 5 || contract.QueueLimit != 5 {
		t.Errorf("QUEUE MaxMsgsPerSubject: got %d (QueueLimit %d); want 5", cfg.MaxMsgsPerSubject, contract.QueueLimit)
	}
	if cfg.Discard != jetstream.DiscardNew || !cfg.DiscardNewPerSubject {
		t.Errorf("QUEUE discard: got %v per subject %v; want DiscardNew per subject", cfg.Discard, cfg.DiscardNewPerSubject)
	}

	alice, bob := mustUser(t, "web", "alice"), mustUser(t, "web", "bob")
	for i := 1; i <= 6; i++ {
		_, err := s.JS.Publish(ctx, contract.QueueSubject(alice), []byte(fmt.Sprint(i)),
			jetstream.WithMsgID(contract.MsgID(alice, fmt.Sprint("m", i))))
		if i <= 5 {
			if err != nil {
				t.Fatalf("publish %d to a queue: %v", i, err)
			}
			continue
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10077 {
			t.Fatalf("publish 6 to a full queue: got %v; want API error code 10077", err)
		}
	}
	if _, err := s.JS.Publish(ctx, contract.QueueSubject(bob), []byte("1")); err != nil {
		t.Errorf("publish to another user's queue: got %v; want accepted", err)
	}
	// A slot freed at the head makes room again.
	head, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(contract.QueueSubject(alice)))
	if err != nil {
		t.Fatal(err)
	}
	if string(head.Data) != "1" {
		t.Errorf("queue head: got %q; want %q", head.Data, "1")
	}
	if err := st.DeleteMsg(ctx, head.Sequence); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JS.Publish(ctx, contract.QueueSubject(alice), []byte("7")); err != nil {
		t.Errorf("publish after dequeue: got %v; want accepted", err)
	}
}

func TestDedup(t *testing.T) {
	s := provisioned(t)
	ctx := t.Context()
	u := mustUser(t, "sms", "15551234567")
	tests := []struct {
		stream, subject string
	}{
		{contract.StreamIn, contract.InboundSubject(u)},
		{contract.StreamJobs, contract.JobSubject(u)},
		{contract.StreamQueue, contract.QueueSubject(u)},
		{contract.StreamEvents, contract.EventSubject(u, contract.KindNotice)},
	}
	for _, tt := range tests {
		id := contract.MsgID(u, "SM123", tt.stream)
		first, err := s.JS.Publish(ctx, tt.subject, []byte("a"), jetstream.WithMsgID(id))
		if err != nil {
			t.Fatalf("%s: publish: %v", tt.stream, err)
		}
		if first.Duplicate {
			t.Errorf("%s: first publish: got Duplicate; want new", tt.stream)
		}
		second, err := s.JS.Publish(ctx, tt.subject, []byte("b"), jetstream.WithMsgID(id))
		if err != nil {
			t.Fatalf("%s: publish again: %v", tt.stream, err)
		}
		if !second.Duplicate || second.Sequence != first.Sequence {
			t.Errorf("%s: second publish: got Duplicate %v seq %d; want Duplicate of seq %d", tt.stream, second.Duplicate, second.Sequence, first.Sequence)
		}
		if tt.stream != contract.StreamIn {
			continue
		}
		st, err := s.JS.Stream(ctx, tt.stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != 1 {
			t.Errorf("%s: got %d messages; want 1", tt.stream, info.State.Msgs)
		}
	}
}

func TestMediaStoreTTL(t *testing.T) {
	tests := []struct {
		opts bus.Options
		want time.Duration
	}{
		{bus.Options{}, 30 * time.Minute},
		{bus.Options{MediaTTL: time.Hour}, time.Hour}, // Provision updates an existing store
		{bus.Options{MediaTTL: 5 * time.Minute}, 5 * time.Minute},
	}
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	for _, tt := range tests {
		if err := bus.Provision(ctx, s.JS, tt.opts); err != nil {
			t.Fatalf("Provision(%+v): %v", tt.opts, err)
		}
		store, err := s.JS.ObjectStore(ctx, contract.BucketMedia)
		if err != nil {
			t.Fatal(err)
		}
		status, err := store.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if status.TTL() != tt.want {
			t.Errorf("Provision(%+v): media TTL got %v; want %v", tt.opts, status.TTL(), tt.want)
		}
	}
	if contract.MediaTTL != 30*time.Minute {
		t.Errorf("MediaTTL: got %v; want 30m", contract.MediaTTL)
	}
}

func testImage(t *testing.T, format string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 6))
	for x := range 8 {
		for y := range 6 {
			img.Set(x, y, color.RGBA{uint8(x * 30), uint8(y * 40), 128, 255})
		}
	}
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80})
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPutImage(t *testing.T) {
	s := provisioned(t)
	ctx := t.Context()
	store, err := s.JS.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		t.Fatal(err)
	}
	pngData, jpegData := testImage(t, "png"), testImage(t, "jpeg")
	tests := []struct {
		name        string
		contentType string
		data        []byte
		ok          bool
	}{
		{"png", "image/png", pngData, true},
		{"jpeg", "image/jpeg", jpegData, true},
		{"png said to be jpeg", "image/jpeg", pngData, false},
		{"jpeg said to be png", "image/png", jpegData, false},
		{"gif type", "image/gif", pngData, false},
		{"jpg alias", "image/jpg", jpegData, false},
		{"text", "image/png", []byte("hello, not an image"), false},
		{"empty", "image/png", nil, false},
	}
	ids := map[string]bool{}
	for _, tt := range tests {
		img, err := bus.PutImage(ctx, store, tt.contentType, tt.data)
		if !tt.ok {
			if !errors.Is(err, contract.ErrInvalidPayload) {
				t.Errorf("%s: PutImage: got %+v, %v; want ErrInvalidPayload", tt.name, img, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: PutImage: %v", tt.name, err)
			continue
		}
		if img.ContentType != tt.contentType || img.Size != len(tt.data) {
			t.Errorf("%s: got %+v; want type %s size %d", tt.name, img, tt.contentType, len(tt.data))
		}
		if ids[img.ID] {
			t.Errorf("%s: id %q reused", tt.name, img.ID)
		}
		ids[img.ID] = true
		if p := contract.MediaPath(img); !mediaNameRE.MatchString(p) {
			t.Errorf("%s: MediaPath %q is not a name media serves", tt.name, p)
		}
		info, err := store.GetInfo(ctx, img.ID)
		if err != nil {
			t.Errorf("%s: GetInfo: %v", tt.name, err)
			continue
		}
		if got := info.Headers.Get("Content-Type"); got != tt.contentType {
			t.Errorf("%s: stored Content-Type got %q; want %q", tt.name, got, tt.contentType)
		}
		data, err := store.GetBytes(ctx, img.ID)
		if err != nil {
			t.Errorf("%s: GetBytes: %v", tt.name, err)
		} else if !bytes.Equal(data, tt.data) {
			t.Errorf("%s: stored %d bytes differ from the %d put", tt.name, len(data), len(tt.data))
		}
	}
	var n int
	objs, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n = len(objs)
	if n != 2 {
		t.Errorf("objects stored: got %d; want 2 (refused images must not be stored)", n)
	}
}

func FuzzUserFromSubject(f *testing.F) {
	for _, s := range []string{
		"ts.in.web.abc", "ts.ev.whatsapp.p_1555.done", "ts.job.x.y", "ts.in.web", "ts...", "ts.in.web.a b",
		"ts.in.web." + strings.Repeat("a", 65), "ts.in.wéb.abc", "ts.in.*.>", "", ".", "ts.in.web.abc\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		u, err := contract.UserFromSubject(subject)
		if err != nil {
			if !errors.Is(err, contract.ErrInvalidUser) {
				t.Fatalf("UserFromSubject(%q): got %v; want ErrInvalidUser", subject, err)
			}
			return
		}
		if err := u.Validate(); err != nil {
			t.Fatalf("UserFromSubject(%q) = %+v, which does not validate: %v", subject, u, err)
		}
		parts := strings.Split(subject, ".")
		if parts[0] != "ts" || parts[2] != u.Channel || parts[3] != u.ID {
			t.Fatalf("UserFromSubject(%q): got %+v; want the 3rd and 4th tokens", subject, u)
		}
		for _, s := range []string{contract.InboundSubject(u), contract.EventSubject(u, contract.KindDone)} {
			if back, err := contract.UserFromSubject(s); err != nil || back != u {
				t.Fatalf("round trip of %+v via %q: got %+v, %v", u, s, back, err)
			}
		}
	})
}

// A web chat session is the server's: a forged or altered cookie names
// nobody, and a session checked with another key is refused.
func TestWebSessions(t *testing.T) {
	s, err := contract.NewWebSessions([]byte("0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	cookie, u := s.New()
	got, err := s.User(cookie)
	if err != nil || got != u || u.Channel != contract.ChannelWeb {
		t.Fatalf("User(New()) = %v, %v; want %v", got, err, u)
	}
	other, _ := contract.NewWebSessions([]byte("another key of 16+ bytes"))
	id, sig, _ := strings.Cut(cookie, ".")
	for _, bad := range []string{
		"", id, id + ".", "." + sig, "someone-else." + sig,
		strings.Repeat("a", 32) + "." + sig, cookie + "x", id + "." + sig[:len(sig)-1],
	} {
		if _, err := s.User(bad); !errors.Is(err, contract.ErrBadSession) {
			t.Errorf("User(%q) error %v; want contract.ErrBadSession", bad, err)
		}
	}
	if _, err := other.User(cookie); !errors.Is(err, contract.ErrBadSession) {
		t.Errorf("a session of another key: error %v; want contract.ErrBadSession", err)
	}
	if _, err := (contract.WebSessions{}).User(cookie); !errors.Is(err, contract.ErrBadSession) {
		t.Errorf("the zero WebSessions accepted a cookie: %v", err)
	}
	if _, err := contract.NewWebSessions([]byte("short")); err == nil {
		t.Error("a 5-byte key accepted")
	}
}

// Text over MaxEventText is cut at a line's end or a character's, with a
// note; what fits is untouched, and the result always fits.
func TestCutText(t *testing.T) {
	if s := strings.Repeat("a", contract.MaxEventText); contract.CutText(s) != s {
		t.Error("text of exactly MaxEventText was cut")
	}
	for _, tc := range []struct{ name, text string }{
		{"one long line", strings.Repeat("x", 3_000_000)},
		{"lines", strings.Repeat("line of text\n", 20_000)},
		{"multibyte", strings.Repeat("ü👍🏽", 100_000)},
	} {
		got := contract.CutText(tc.text)
		if len(got) > contract.MaxEventText || !utf8.ValidString(got) {
			t.Errorf("%s: %d bytes, valid UTF-8 %v; want at most %d, valid", tc.name, len(got), utf8.ValidString(got), contract.MaxEventText)
		}
		body, note, ok := strings.Cut(got, "\n\n[Reply cut: the agent wrote ")
		if !ok || !strings.HasSuffix(note, "; here are the first 128 KB.]") || !strings.HasPrefix(tc.text, body) {
			t.Errorf("%s: ends %q; want the text's start and the note", tc.name, got[len(got)-80:])
		}
	}
	if got := contract.CutText(strings.Repeat("x", 3_000_000)); !strings.Contains(got, "wrote 3.0 MB") {
		t.Errorf("note %q; want 3.0 MB", got[len(got)-70:])
	}
	// Encoded, the worst text still fits NATS's default max_payload.
	worst := contract.Event{Kind: contract.KindDone, User: contract.User{Channel: "web", ID: "u"}, JobID: "j",
		Text: contract.CutText(strings.Repeat("<", 2_000_000))}
	if data, err := contract.Encode(&worst); err != nil || len(data) >= 1<<20 {
		t.Errorf("encoded event of %d bytes (%v); want under 1 MiB", len(data), err)
	}
}

// CutRunes keeps at most n runes, the last an ellipsis when cut, never
// splitting a character; FirstLine is the first line with words, trimmed.
func TestCutRunesFirstLine(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"too long", 5, "too …"},
		{"üüüüü", 3, "üü…"},
		{"", 3, ""},
	} {
		if got := contract.CutRunes(tc.s, tc.n); got != tc.want {
			t.Errorf("CutRunes(%q, %d) = %q; want %q", tc.s, tc.n, got, tc.want)
		}
	}
	for in, want := range map[string]string{
		"one\ntwo":          "one",
		"\n  \r\n  two  \n": "two",
		"a\rb":              "a",
		" \n\t":             "",
	} {
		if got := contract.FirstLine(in); got != want {
			t.Errorf("FirstLine(%q) = %q; want %q", in, got, want)
		}
	}
}

// Every stream, bucket and the object store has a byte limit; the work
// queues refuse new messages when full rather than drop accepted ones. A
// deployment provisioned before the limits gets them.
func TestProvisionLimits(t *testing.T) {
	ns := natstest.RunJetStream(t)
	ctx := t.Context()
	// As an older textslash made them: no byte limits.
	for _, cfg := range bus.Streams(bus.Options{}) {
		cfg.MaxBytes, cfg.MaxMsgSize, cfg.Discard = 0, 0, jetstream.DiscardOld
		if cfg.Name == contract.StreamQueue {
			cfg.Discard = jetstream.DiscardNew
		}
		if _, err := ns.JS.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := bus.Provision(ctx, ns.JS, bus.Options{}); err != nil {
		t.Fatalf("provision over an older deployment: %v", err)
	}
	for _, name := range []string{contract.StreamIn, contract.StreamJobs, contract.StreamQueue, contract.StreamTimers, contract.StreamEvents} {
		s, err := ns.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		if cfg.MaxBytes <= 0 || cfg.MaxMsgSize <= 0 {
			t.Errorf("stream %s: max bytes %d, max message %d; want limits", name, cfg.MaxBytes, cfg.MaxMsgSize)
		}
		if name != contract.StreamEvents && name != contract.StreamTimers && cfg.Discard != jetstream.DiscardNew {
			t.Errorf("stream %s discards %v when full; want new messages refused", name, cfg.Discard)
		}
	}
	for _, b := range []string{contract.BucketUsers, contract.BucketEgress, contract.BucketRunners, contract.BucketWorkspaces, contract.BucketCosts, contract.BucketPeople, contract.BucketPairing} {
		kv, err := ns.JS.KeyValue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info := st.(*jetstream.KeyValueBucketStatus).StreamInfo(); info.Config.MaxBytes <= 0 {
			t.Errorf("bucket %s has no byte limit", b)
		}
	}
	obj, err := ns.JS.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := obj.Status(ctx); err != nil || st.(*jetstream.ObjectBucketStatus).StreamInfo().Config.MaxBytes <= 0 {
		t.Errorf("object store %s has no byte limit (%v)", contract.BucketMedia, err)
	}
}

func TestCostString(t *testing.T) {
	for _, c := range []struct {
		cost contract.Cost
		want string
	}{
		{contract.Cost{}, "$0.0000, 0 tokens in, 0 out"},
		{contract.Cost{USD: 0.01234, InputTokens: 1234567, OutputTokens: 999}, "$0.0123, 1,234,567 tokens in, 999 out"},
		{contract.Cost{USD: 2, InputTokens: 1000, OutputTokens: 100000}, "$2.0000, 1,000 tokens in, 100,000 out"},
	} {
		if got := c.cost.String(); got != c.want {
			t.Errorf("%+v: got %q; want %q", c.cost, got, c.want)
		}
	}
}

func TestSafeName(t *testing.T) {
	long := strings.Repeat("a", 200) + ".pdf"
	for in, want := range map[string]string{
		"report.pdf":           "report.pdf",
		"../../etc/passwd":     "passwd",
		`C:\\x\\bad name!.txt`: "bad_name_.txt",
		".bashrc":              "bashrc",
		"":                     "file",
		"..":                   "file",
		"naïve.csv":            "na__ve.csv",
		long:                   strings.Repeat("a", 96) + ".pdf",
	} {
		if got := contract.SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q; want %q", in, got, want)
		}
	}
}

func FuzzSafeName(f *testing.F) {
	f.Add("../a b/c.pdf")
	f.Fuzz(func(t *testing.T, name string) {
		got := contract.SafeName(name)
		if got == "" || len(got) > 100 || strings.ContainsAny(got, "/\\ ") || got[0] == '.' || got == ".." {
			t.Fatalf("SafeName(%q) = %q", name, got)
		}
	})
}

// A plug-in channel keeps its images and files, and what it sent, in
// stores of its own, which Provision makes for the channels it is named;
// the built-in channels share media and egress.
func TestPluginChannelsGetMediaStoresOfTheirOwn(t *testing.T) {
	for _, tt := range []struct{ channel, want string }{
		{contract.ChannelWhatsApp, "media"}, {contract.ChannelSMS, "media"},
		{contract.ChannelTelegram, "media"}, {contract.ChannelWeb, "media"},
		{"slack", "media-slack"}, {"discord", "media-discord"}, {"line", "media-line"},
	} {
		if got := contract.MediaBucketOf(tt.channel); got != tt.want {
			t.Errorf("MediaBucketOf(%q) = %q; want %q", tt.channel, got, tt.want)
		}
		if got, want := contract.EgressBucketOf(tt.channel), strings.Replace(tt.want, "media", "egress", 1); got != want {
			t.Errorf("EgressBucketOf(%q) = %q; want %q", tt.channel, got, want)
		}
	}
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	o := bus.Options{Channels: []string{"slack", "line", contract.ChannelWeb}, MediaTTL: time.Hour}
	for range 2 { // again: Provision updates what is there
		if err := bus.Provision(ctx, s.JS, o); err != nil {
			t.Fatalf("Provision(%+v): %v", o, err)
		}
	}
	for _, ch := range []string{"slack", "line"} {
		store, err := s.JS.ObjectStore(ctx, contract.MediaBucketOf(ch))
		if err != nil {
			t.Fatalf("object store of %s: %v", ch, err)
		}
		status, err := store.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if status.TTL() != time.Hour {
			t.Errorf("%s: TTL got %v; want the media TTL, 1h", status.Bucket(), status.TTL())
		}
	}
	for _, ch := range []string{"slack", "line"} {
		if _, err := s.JS.KeyValue(ctx, contract.EgressBucketOf(ch)); err != nil {
			t.Errorf("egress bucket of %s: %v", ch, err)
		}
	}
	if _, err := s.JS.ObjectStore(ctx, "media-web"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("media-web: got %v; want %v (a built-in channel's objects are in media)", err, jetstream.ErrBucketNotFound)
	}
	if _, err := s.JS.ObjectStore(ctx, "media-discord"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("media-discord: got %v; want %v (not named)", err, jetstream.ErrBucketNotFound)
	}
	if err := bus.Provision(ctx, s.JS, bus.Options{Channels: []string{"a.b"}}); !errors.Is(err, contract.ErrInvalidUser) {
		t.Errorf("Provision of channel a.b: got %v; want %v", err, contract.ErrInvalidUser)
	}
}

package ingress_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/notion"
	"github.com/textslash/textslash/notiontest"
)

const notionToken = "ntn_ingress_test_0123456789"

var notionUser = contract.User{Channel: contract.ChannelTelegram, ID: "4242"}

// startNotion runs an ingress polling db every second until the test ends
// or the returned func stops it.
func startNotion(t *testing.T, js jetstream.JetStream, api *notiontest.Server, db string) (stop func()) {
	t.Helper()
	in, err := ingress.New(ingress.Config{Notion: &ingress.Notion{
		Client:   &notion.Client{BaseURL: api.URL(), Token: notionToken},
		Database: db, User: notionUser, StatusProperty: "Status", Todo: "To do", Every: time.Second,
	}}, js, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("ingress: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// inbound is every message in IN, oldest first.
func inbound(t *testing.T, js jetstream.JetStream) []contract.Inbound {
	t.Helper()
	ctx := t.Context()
	s, err := js.Stream(ctx, contract.StreamIn)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []contract.Inbound
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

// Pages whose status asks for work become one message each, with the
// page's title and text, for the configured person; pages in other
// statuses do not. Neither more polls, a second ingress polling at the
// same time, nor a restart start a page again; a page moved back to To do
// (a new version) starts once more.
func TestNotionPagesBecomeMessagesOnce(t *testing.T) {
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	api := notiontest.New(t, notionToken)
	db := api.AddDatabase("Status", "To do", "In progress", "Done")
	login := api.AddPage(db, "Login screen is broken", "To do", "The button does nothing.", "Seen on /login.")
	api.AddPage(db, "Old bug", "Done")
	nav := api.AddPage(db, "Menu overlaps the logo", "To do")
	api.AddPage(db, "Footer typo", "In progress")

	stop1 := startNotion(t, ns.JS, api, db)
	startNotion(t, ns.JS, api, db) // a second ingress, polling too
	natstest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if n := len(inbound(t, ns.JS)); n < 2 {
			return fmt.Errorf("%d messages; want 2", n)
		}
		return nil
	})
	// Through several more polls of both, a restart, and more: no third.
	atMostTwo := func() error {
		if n := len(inbound(t, ns.JS)); n > 2 {
			return fmt.Errorf("%d messages; want one for each of the two pages to do", n)
		}
		return nil
	}
	natstest.HoldsUntil(t, time.Now().Add(2500*time.Millisecond), atMostTwo)
	stop1()
	startNotion(t, ns.JS, api, db) // a restart
	natstest.HoldsUntil(t, time.Now().Add(1500*time.Millisecond), atMostTwo)

	msgs := inbound(t, ns.JS)
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	if len(msgs) != 2 {
		t.Fatalf("messages %q; want one for each of the two pages to do", ids)
	}
	for i, want := range []struct{ page, text string }{
		{login, "Login screen is broken\n\nThe button does nothing.\nSeen on /login."},
		{nav, "Menu overlaps the logo"},
	} {
		m := msgs[i]
		if task, ok := contract.NotionPage(m.ID); !ok || task != contract.NotionTaskID(want.page) {
			t.Errorf("message %d id %q; want a Notion job id of page %s", i, m.ID, want.page)
		}
		if m.User != notionUser {
			t.Errorf("message %d is %s's; want %s's", i, m.User, notionUser)
		}
		if m.Text != want.text {
			t.Errorf("message %d text %q; want %q", i, m.Text, want.text)
		}
	}

	// Edited back into the filter a minute later (Notion's edit times are
	// whole minutes): a new version.
	// The person was told, once a page, what the replies to come are about.
	notices, err := ns.JS.Stream(t.Context(), contract.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	last, err := notices.GetLastMsgForSubject(t.Context(), contract.EventSubject(notionUser, contract.KindNotice))
	if err != nil {
		t.Fatal(err)
	}
	var ev contract.Event
	if err := contract.Decode(last.Data, &ev); err != nil || !strings.HasPrefix(ev.Text, "📋 A task from Notion: Menu overlaps the logo\nhttps://") {
		t.Errorf("last notice %+v (%v); want the second page's title and link", ev, err)
	}
	subj := contract.EventSubject(notionUser, contract.KindNotice)
	if info, err := notices.Info(t.Context(), jetstream.WithSubjectFilter(subj)); err != nil || info.State.Subjects[subj] != 2 {
		t.Errorf("notices: %v (%v); want 2", info.State.Subjects, err)
	}

	api.Advance(time.Minute)
	api.SetStatus(login, "To do")
	natstest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if n := len(inbound(t, ns.JS)); n != 3 {
			return fmt.Errorf("%d messages; want 3", n)
		}
		return nil
	})
	again := inbound(t, ns.JS)[2]
	if task, _ := contract.NotionPage(again.ID); task != contract.NotionTaskID(login) || slices.Contains(ids, again.ID) {
		t.Errorf("after the edit: message %q; want a new id for page %s", again.ID, login)
	}
}

// A poll told to slow down (429) waits Retry-After and goes on; a database
// without the status property is refused with a log line, never a panic
// or a message.
func TestNotionRateLimitedAndMisconfigured(t *testing.T) {
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	api := notiontest.New(t, notionToken)
	db := api.AddDatabase("Status", "To do", "Done")
	api.AddPage(db, "Crash on save", "To do")
	api.RateLimit(2, 1)
	startNotion(t, ns.JS, api, db)
	natstest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if n := len(inbound(t, ns.JS)); n != 1 {
			return fmt.Errorf("%d messages; want 1", n)
		}
		return nil
	})

	other := api.AddDatabase("Stage", "To do")
	api.AddPage(other, "Never run", "To do")
	var logs natstest.Logs
	in, err := ingress.New(ingress.Config{Notion: &ingress.Notion{
		Client:   &notion.Client{BaseURL: api.URL(), Token: notionToken},
		Database: other, User: notionUser, StatusProperty: "Status", Todo: "To do", Every: time.Second,
	}}, ns.JS, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := in.Run(ctx); err != nil {
		t.Errorf("Run with a misconfigured database: %v; want it to keep polling (and logging) until stopped", err)
	}
	if n := len(inbound(t, ns.JS)); n != 1 {
		t.Errorf("%d messages; want still 1", n)
	}
	// The log names the setting as the service's Config does.
	lines := logs.Find(t, "notion poll failed", nil)
	if len(lines) == 0 {
		t.Fatal("no log line of the failed poll")
	}
	msg, _ := lines[0]["error"].(string)
	if !strings.Contains(msg, "Notion.StatusProperty") || strings.Contains(msg, "TEXTSLASH_") {
		t.Errorf("logged %q; want it to name Notion.StatusProperty, not the binary's variable", msg)
	}
}

// Bad Notion settings are refused, each named by its field.
func TestNotionConfig(t *testing.T) {
	newIngress := withJetStream(t)
	good := func(change func(*ingress.Notion)) *ingress.Notion {
		n := &ingress.Notion{Client: &notion.Client{}, Database: "db", User: notionUser, StatusProperty: "Status", Todo: "To do"}
		change(n)
		return n
	}
	tests := []struct {
		name    string
		n       *ingress.Notion
		setting string
	}{
		{"no client", good(func(n *ingress.Notion) { n.Client = nil }), "Notion.Client"},
		{"no database", good(func(n *ingress.Notion) { n.Database = "" }), "Notion.Database"},
		{"no person", good(func(n *ingress.Notion) { n.User = contract.User{} }), "Notion.User"},
		{"no status property", good(func(n *ingress.Notion) { n.StatusProperty = "" }), "Notion.StatusProperty"},
		{"no to-do option", good(func(n *ingress.Notion) { n.Todo = "" }), "Notion.Todo"},
		{"polls too often", good(func(n *ingress.Notion) { n.Every = 100 * time.Millisecond }), "Notion.Every"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, newIngress, ingress.Config{Notion: tt.n}, tt.setting)
		})
	}
}

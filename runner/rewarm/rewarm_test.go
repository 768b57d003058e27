package rewarm

import (
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// Recent are the people whose workspace this runner holds and whose state
// changed within the time given, the most recent first: not another
// runner's, not someone with no state, nobody when the time is over.
func TestRecentAreThisRunnersLatest(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	ws, err := s.JS.KeyValue(ctx, contract.BucketWorkspaces)
	if err != nil {
		t.Fatal(err)
	}
	users, err := s.JS.KeyValue(ctx, contract.BucketUsers)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id, runner string, state bool) {
		t.Helper()
		if _, err := ws.Put(ctx, "web."+id, []byte(runner)); err != nil {
			t.Fatal(err)
		}
		if !state {
			return
		}
		data, err := contract.Encode(&contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: id}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := users.Put(ctx, "web."+id, data); err != nil {
			t.Fatal(err)
		}
	}
	put("first", "r1", true)
	put("theirs", "r2", true)
	put("nostate", "r1", false)
	put("latest", "r1", true)
	got, err := Recent(ctx, ws, users, "r1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range got {
		ids = append(ids, p.User.ID)
		if p.State.Project != p.User.ID {
			t.Errorf("%s's state: project %q; want theirs", p.User.ID, p.State.Project)
		}
	}
	if len(ids) != 2 || ids[0] != "latest" || ids[1] != "first" {
		t.Errorf("Recent: %q; want [latest first]", ids)
	}
	if got, err := Recent(ctx, ws, users, "r1", time.Nanosecond); err != nil || len(got) != 0 {
		t.Errorf("Recent within 1ns: %d people, %v; want none", len(got), err)
	}
}

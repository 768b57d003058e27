package home

import (
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// What is kept with a home is made once, found by its person, and let go
// with the home: its warm agent closed, and gone told (the disks it bound
// may be swept).
func TestKeeperKeepsWhatGoesWithAHome(t *testing.T) {
	gone := make(chan struct{}, 1)
	k := New(&sandbox.Homes{}, func() { gone <- struct{}{} })
	st := k.For("h1", "web.alice")
	if again := k.For("h1", "web.alice"); again != st || st.Token == "" || st.Task != "home-h1" || st.Warm == nil {
		t.Fatalf("For: %+v then %+v; want one state, with a token, the home's task and a warm agent", st, again)
	}
	if !k.Has("web.alice") || k.Has("web.bob") || k.Kept("h1") != st || k.Kept("h2") != nil {
		t.Error("Has and Kept do not find alice's home alone")
	}
	if k.Of("web.alice") != nil {
		t.Error("Of gave a home no run entered")
	}
	k.Homes.OnClose("h1")
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("gone not told of the home let go")
	}
	if k.Has("web.alice") || k.Kept("h1") != nil || k.WarmAgents() != 0 {
		t.Error("the home's state outlived it")
	}
	var none *Keeper
	if none.Of("web.alice") != nil || none.Previews() != nil {
		t.Error("no homes kept: Of and Previews want nothing")
	}
	var done contract.Event
	none.HandedOver(&done, "web.alice", nil, time.Now())
}

package contract_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

// oldDone is a done event as a runner that keeps no homes writes it: no
// warm_until.
const oldDone = `{"v":1,"kind":"done","user":{"channel":"web","id":"abc"},"job_id":"j1",` +
	`"at":"2026-11-26T10:00:00Z","text":"ok","status":"ok"}`

// TestDoneWarmUntil: a done event says until when the person's home stays
// warm as warm_until; an old runner's event, without it, reads as zero
// (not kept), and a zero one is written without the key, as before.
func TestDoneWarmUntil(t *testing.T) {
	var old contract.Event
	if err := contract.Decode([]byte(oldDone), &old); err != nil {
		t.Fatalf("Decode(an old runner's done): %v", err)
	}
	if !old.WarmUntil.IsZero() {
		t.Errorf("old done: WarmUntil = %v; want zero", old.WarmUntil)
	}
	data, err := contract.Encode(&old)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	if _, ok := keys["warm_until"]; ok {
		t.Errorf("done not kept warm: got %s; want no warm_until", data)
	}

	until := time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)
	warm := old
	warm.WarmUntil = until
	if data, err = contract.Encode(&warm); err != nil {
		t.Fatal(err)
	}
	keys = nil
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	if got, want := keys["warm_until"], "2026-11-26T10:42:00Z"; got != want {
		t.Errorf("warm done: warm_until = %v; want %q (in %s)", got, want, data)
	}
	var back contract.Event
	if err := contract.Decode(data, &back); err != nil {
		t.Fatal(err)
	}
	if !back.WarmUntil.Equal(until) {
		t.Errorf("read back: WarmUntil = %v; want %v", back.WarmUntil, until)
	}
}

// TestUserStateWarmUntil: the state keeps it as warm_until; a record
// written before it existed reads as zero (TestUserStateRecord), and a
// zero one adds no key (TestUserStateEmpty).
func TestUserStateWarmUntil(t *testing.T) {
	until := time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)
	data, err := contract.Encode(&contract.UserState{State: contract.StateIdle, WarmUntil: until})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"state":"idle","since":"0001-01-01T00:00:00Z","warm_until":"2026-11-26T10:42:00Z"}`
	if string(data) != want {
		t.Errorf("got %s; want %s", data, want)
	}
	var st contract.UserState
	if err := contract.Decode(data, &st); err != nil {
		t.Fatal(err)
	}
	if !st.WarmUntil.Equal(until) {
		t.Errorf("read back: WarmUntil = %v; want %v", st.WarmUntil, until)
	}
}

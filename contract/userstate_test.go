package contract_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

// stateRecord is a users bucket record with every field set, as the
// dispatcher wrote it before the person's settings were a type of their
// own (contract.Settings): the keys are one flat object.
const stateRecord = `{"v":1,"state":"awaiting_approval","job_id":"j1","since":"2025-01-02T03:04:05Z",` +
	`"new_session":true,"action":"approve","job_new_session":true,"job_mode":"plan","queued":"q1",` +
	`"finished":["f0","f1"],"question":2,"asked":"Claude wants to run ls.","mode":"plan","usual":"auto",` +
	`"steer":true,"zone":"Europe/Paris","project":"web","job_project":"api","parked":{"docs":"j0"},"branches":true}`

// TestUserStateRecord: a record written in the flat shape reads into the
// same fields, its settings into Settings, and is written back with the
// same keys and values.
func TestUserStateRecord(t *testing.T) {
	var st contract.UserState
	if err := contract.Decode([]byte(stateRecord), &st); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := contract.UserState{V: 1, State: contract.StateAwaitingApproval, JobID: "j1",
		Since: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Action: "approve", JobNewSession: true, JobMode: "plan",
		JobProject: "api", Queued: "q1", Finished: []string{"f0", "f1"}, Question: 2, Asked: "Claude wants to run ls.",
		Settings: contract.Settings{NewSession: true, Mode: contract.ModePlan, Usual: contract.ModeAuto, Steer: true,
			Zone: "Europe/Paris", Project: "web", Parked: map[string]string{"docs": "j0"}, Branches: true}}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("decoded: got %+v; want %+v", st, want)
	}
	data, err := contract.Encode(&st)
	if err != nil {
		t.Fatal(err)
	}
	var got, old map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(stateRecord), &old); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, old) {
		t.Errorf("encoded again: got %s; want the keys and values of %s", data, stateRecord)
	}
	if _, nested := got["Settings"]; nested {
		t.Errorf("encoded: settings nested under a key of their own: %s", data)
	}
}

// TestUserStateEmpty: an idle person with no settings is written as few
// keys as before.
func TestUserStateEmpty(t *testing.T) {
	data, err := contract.Encode(&contract.UserState{State: contract.StateIdle})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"v":1,"state":"idle","since":"0001-01-01T00:00:00Z"}`; string(data) != want {
		t.Errorf("got %s; want %s", data, want)
	}
}

package fsm

import (
	"reflect"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

// jobFields are the fields of a UserState that say what runs: every
// transition sets them, and kept clears them. Every other field outlasts
// transitions.
var jobFields = map[string]bool{"State": true, "JobID": true, "Action": true, "JobNewSession": true,
	"JobMode": true, "JobProject": true, "Question": true, "Asked": true}

// full is a UserState with every field set, Settings' too.
func full(t *testing.T) contract.UserState {
	var s contract.UserState
	fill(t, reflect.ValueOf(&s).Elem(), "UserState")
	return s
}

func fill(t *testing.T, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x-" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint64:
		v.SetUint(7)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), path+"[0]")
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+".key")
		fill(t, e, path+".value")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	default:
		t.Fatalf("%s: no filler for a %s: teach fill", path, v.Kind())
	}
}

// TestKeptCarriesAllButTheJob: what outlasts a transition is every field
// of a UserState but the job's, and the person's Settings whole. A field
// added to UserState fails here until it is either kept or one of
// jobFields; a field added to Settings is kept without a word.
func TestKeptCarriesAllButTheJob(t *testing.T) {
	s := full(t)
	got := kept(s)
	st := reflect.TypeOf(s)
	for i := range st.NumField() {
		f := st.Field(i)
		was, now := reflect.ValueOf(s).Field(i), reflect.ValueOf(got).Field(i)
		switch {
		case jobFields[f.Name] && !now.IsZero():
			t.Errorf("kept(s).%s = %v; want it cleared (the job's)", f.Name, now)
		case !jobFields[f.Name] && !reflect.DeepEqual(was.Interface(), now.Interface()):
			t.Errorf("kept(s).%s = %v; want %v: every field but the job's outlasts a transition", f.Name, now, was)
		}
	}
}

// TestSettingsOutlastTransitions: the person's Settings come out of
// every kind of move whole, whatever runs.
func TestSettingsOutlastTransitions(t *testing.T) {
	s := full(t)
	s.NewSession = false // a message's job uses it up
	for _, tt := range []struct {
		name  string
		state string
		in    Input
	}{
		{"idle + message → working", contract.StateIdle, Input{Kind: Message, ID: msgM}},
		{"working + done → idle", contract.StateWorking, Input{Kind: Done, ID: jobJ}},
		{"working + done with changes → awaiting approval", contract.StateWorking, Input{Kind: Done, ID: jobJ, Approval: true}},
		{"working + cancel → idle", contract.StateWorking, Input{Kind: Keyword, Keyword: Cancel, ID: kwK}},
		{"awaiting approval + approve → working", contract.StateAwaitingApproval, Input{Kind: Keyword, Keyword: Approve, ID: kwK}},
		{"awaiting approval + timeout → idle", contract.StateAwaitingApproval, Input{Kind: Timeout, ID: jobJ}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			from := s
			from.State, from.JobID, from.JobProject, from.Parked = tt.state, jobJ, s.Project, nil
			next, _ := Step(from, tt.in)
			if next.State == from.State {
				t.Fatalf("Step stayed in %s; want a move", next.State)
			}
			if !reflect.DeepEqual(next.Settings, from.Settings) {
				t.Errorf("Settings: got %+v; want %+v", next.Settings, from.Settings)
			}
		})
	}
}

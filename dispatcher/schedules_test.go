package dispatcher_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/natstest"
)

// A task scheduled with at runs once when its time comes, even with the
// dispatcher stopped and started again in between.
func TestScheduleAtSurvivesRestart(t *testing.T) {
	b := newBench(t, dispatcher.Config{Location: time.UTC})
	u := user(t, "alice")
	at := time.Now().UTC().Add(3 * time.Second)
	got := b.say(u, "s1", "at "+at.Format("15:04:05")+" echo later")
	if len(got) != 1 || !strings.HasPrefix(got[0], "Scheduled ") || !strings.Contains(got[0], "“echo later”, at ") {
		t.Fatalf("notices %q; want the schedule confirmed", got)
	}
	id := strings.Fields(got[0])[1]
	id = strings.TrimSuffix(id, ":")
	if list := b.say(u, "s2", "schedules"); len(list) != 1 || !strings.Contains(list[0], id+"  at ") {
		t.Errorf("schedules: %q; want %s listed", list, id)
	}
	b.stopDispatcher()
	// The schedule fires while no dispatcher runs: its message waits in
	// TIMERS.
	natstest.CheckFor(t, time.Until(at)+10*time.Second, 50*time.Millisecond, func() error {
		if fired := b.raw(contract.StreamTimers, contract.ScheduledSubject(u)); len(fired) == 0 {
			return fmt.Errorf("the schedule has not fired")
		}
		return nil
	})
	b.startDispatcher()
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, j := range b.jobsOf(u) {
			if j.Text == "echo later" {
				return nil
			}
		}
		return fmt.Errorf("jobs %v", jobIDs(b.jobsOf(u)))
	})
	b.finish(u, b.jobsOf(u)[0].ID, false)
	b.waitState(u, contract.StateIdle, "")
	if jobs := b.jobsOf(u); len(jobs) != 1 {
		t.Errorf("jobs %v; want the scheduled task once", jobIDs(jobs))
	}
	if list := b.say(u, "s3", "schedules"); len(list) != 1 || !strings.HasPrefix(list[0], "No schedules") {
		t.Errorf("schedules after it ran: %q; want none", list)
	}
}

// every repeats until unscheduled; unknown ids and bad times are told.
func TestScheduleEvery(t *testing.T) {
	b := newBench(t, dispatcher.Config{Location: time.UTC})
	u := user(t, "alice")
	got := b.say(u, "s1", "every 5s ping")
	if len(got) != 1 || !strings.Contains(got[0], "every 5s") {
		t.Fatalf("notices %q", got)
	}
	id := strings.TrimSuffix(strings.Fields(got[0])[1], ":")
	for n := 1; n <= 2; n++ {
		natstest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
			if jobs := b.jobsOf(u); len(jobs) < n {
				return fmt.Errorf("%d runs", len(jobs))
			}
			return nil
		})
		jobs := b.jobsOf(u)
		b.finish(u, jobs[len(jobs)-1].ID, false)
		b.waitState(u, contract.StateIdle, "")
	}
	if got := b.say(u, "s2", "unschedule "+id); len(got) != 1 || got[0] != "Unscheduled "+id+"." {
		t.Errorf("unschedule: %q", got)
	}
	if got := b.say(u, "s3", "unschedule nope"); len(got) != 1 || !strings.HasPrefix(got[0], "No schedule nope.") {
		t.Errorf("unschedule nope: %q", got)
	}
	if got := b.say(u, "s4", "at 2020-01-01 09:00 too late"); len(got) != 1 || !strings.Contains(got[0], "is past") {
		t.Errorf("a past time: %q", got)
	}
	n := len(b.jobsOf(u))
	natstest.HoldsUntil(t, time.Now().Add(6*time.Second), func() error {
		if m := len(b.jobsOf(u)); m != n {
			return fmt.Errorf("%d runs after unschedule; want %d", m, n)
		}
		return nil
	})
}

// at reads the times people type, and a time it cannot read is answered
// with how to say when: the task never runs at once.
func TestScheduleAtFormsAndTypos(t *testing.T) {
	b := newBench(t, dispatcher.Config{Location: time.UTC})
	u := user(t, "alice")
	tomorrow := func() string { return time.Now().UTC().AddDate(0, 0, 1).Format("Mon 2 Jan") + " 18:00 (UTC)" }
	for _, c := range []struct{ text, task, when string }{
		{"at 6pm echo later-please", "echo later-please", " 18:00 (UTC)"},
		{"at 18:00 tomorrow echo y", "echo y", tomorrow()},
		{"in 2h echo soon", "echo soon", " (UTC)"},
	} {
		got := b.say(u, c.text, c.text)
		if len(got) != 1 || !strings.HasPrefix(got[0], "Scheduled ") || !strings.Contains(got[0], "“"+c.task+"”, at ") ||
			!strings.Contains(got[0], c.when) && (c.when != tomorrow() || !strings.Contains(got[0], tomorrow())) {
			t.Errorf("%s: notices %q; want %q scheduled, %s", c.text, got, c.task, c.when)
		}
	}
	for _, text := range []string{"at 25:99 echo bad", "at 6xm echo bad", "at 13pm echo bad", "at tomorow 9am echo bad", "every monday 13pm echo bad"} {
		got := b.say(u, text, text)
		if len(got) != 1 || !strings.HasPrefix(got[0], "I could not read that schedule: say when") {
			t.Errorf("%s: notices %q; want how to say when", text, got)
		}
	}
	if st, _ := b.state(u); st.State != "" && st.State != contract.StateIdle {
		t.Errorf("state %q after schedules and typos; want idle, nothing run", st.State)
	}
	if list := b.say(u, "list", "schedules"); len(list) != 1 || strings.Count(list[0], "\n") != 3 {
		t.Errorf("schedules: %q; want the three", list)
	}
	// A message that only starts with at still runs.
	b.say(u, "top", "at the top of the file, add a comment")
	b.waitState(u, contract.StateWorking, "top")
}

// With the server's own zone, a schedule names it as status does (its IANA
// name, Etc/UTC), never Go's "Local".
func TestScheduleNamesTheServersZone(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	got := b.say(u, "s1", "in 2h echo soon")
	if len(got) != 1 || strings.Contains(got[0], "(Local)") {
		t.Fatalf("notices %q; want one naming the zone", got)
	}
	open, close := strings.LastIndex(got[0], "("), strings.LastIndex(got[0], ")")
	if open < 0 || close < open {
		t.Fatalf("notice %q names no zone", got[0])
	}
	if name := got[0][open+1 : close]; name == "Local" || name == "" {
		t.Errorf("zone %q; want an IANA name", name)
	} else if _, err := time.LoadLocation(name); err != nil {
		t.Errorf("zone %q: %v; want an IANA name", name, err)
	}
}

package fsm

import (
	"errors"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

func TestParseSchedule(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	now := time.Date(2026, 11, 24, 17, 30, 0, 0, paris) // a Tuesday
	for _, c := range []struct {
		kw, arg string
		want    Schedule
	}{
		{At, "18:00 run the test suite", Schedule{Text: "run the test suite", At: time.Date(2026, 11, 24, 18, 0, 0, 0, paris), When: "at Tue 24 Nov 18:00 (Europe/Paris)"}},
		{At, "9:05 standup notes", Schedule{Text: "standup notes", At: time.Date(2026, 11, 25, 9, 5, 0, 0, paris), When: "at Wed 25 Nov 09:05 (Europe/Paris)"}},
		{At, "17:30:20 soon", Schedule{Text: "soon", At: time.Date(2026, 11, 24, 17, 30, 20, 0, paris), When: "at Tue 24 Nov 17:30:20 (Europe/Paris)"}},
		{At, "2026-12-01 09:30 release", Schedule{Text: "release", At: time.Date(2026, 12, 1, 9, 30, 0, 0, paris), When: "at Tue 1 Dec 09:30 (Europe/Paris)"}},
		{Every, "weekday 9:00 summarize open PRs", Schedule{Text: "summarize open PRs", Cron: "0 0 9 * * 1-5", When: "every weekday at 09:00 (Europe/Paris)"}},
		{Every, "Mondays 18:15 plan the week", Schedule{Text: "plan the week", Cron: "0 15 18 * * 1", When: "every monday at 18:15 (Europe/Paris)"}},
		{Every, "day 7:00 check the build", Schedule{Text: "check the build", Cron: "0 0 7 * * *", When: "every day at 07:00 (Europe/Paris)"}},
		{Every, "2h look at the queue", Schedule{Text: "look at the queue", Every: 2 * time.Hour, When: "every 2h"}},
		{Every, "30m ping", Schedule{Text: "ping", Every: 30 * time.Minute, When: "every 30m"}},
		{Every, "90s ping", Schedule{Text: "ping", Every: 90 * time.Second, When: "every 1m30s"}},
	} {
		got, err := ParseSchedule(c.kw, c.arg, now, paris)
		if err != nil || got.Text != c.want.Text || !got.At.Equal(c.want.At) || got.Cron != c.want.Cron || got.Every != c.want.Every || got.When != c.want.When {
			t.Errorf("%s %s: got %+v, %v; want %+v", c.kw, c.arg, got, err, c.want)
		}
	}
	for _, c := range []struct{ kw, arg string }{
		{At, "18:00"}, {At, "25:00 x"}, {At, "2026-11-01 09:00 past"}, {At, "2026-13-01 09:00 x"},
		{Every, "weekday x"}, {Every, "fortnight 9:00 x"}, {Every, "2s too often"}, {Every, "day 9:00"},
	} {
		if s, err := ParseSchedule(c.kw, c.arg, now, paris); err == nil {
			t.Errorf("%s %s: got %+v; want an error", c.kw, c.arg, s)
		}
	}
	if _, err := ParseSchedule(At, "noon lunch", now, paris); !errors.Is(err, ErrSchedule) {
		t.Errorf("at noon: %v; want ErrSchedule", err)
	}
}

// "at" and "every" are keywords only when a time follows.
func TestScheduleKeywords(t *testing.T) {
	for in, want := range map[string]string{
		"at 18:00 run the tests":                At,
		"At 2026-12-01 09:00 release":           At,
		"every weekday 9:00 summarize PRs":      Every,
		"every 2h check":                        Every,
		"at the top of the file, add a comment": "",
		"every file needs a header":             "",
		"schedules":                             Schedules,
		"unschedule 3f2a9c":                     Unschedule,
		"tz Europe/Paris":                       Zone,
	} {
		if kw, _, _ := ParseKeyword(in); kw != want {
			t.Errorf("ParseKeyword(%q) = %q; want %q", in, kw, want)
		}
	}
	s, eff := Step(contract.UserState{State: contract.StateIdle}, Input{Kind: Keyword, Keyword: Zone, Arg: "Europe/Paris"})
	if s.Zone != "Europe/Paris" || len(eff) != 1 {
		t.Errorf("tz Europe/Paris: zone %q, effects %v", s.Zone, eff)
	}
	if s, _ := Step(s, Input{Kind: Keyword, Keyword: Zone, Arg: "Mars/Olympus"}); s.Zone != "Europe/Paris" {
		t.Errorf("tz Mars/Olympus changed the zone to %q", s.Zone)
	}
}

// FuzzParseSchedule: whatever follows at or every, a schedule read is
// one that can be armed: something to run, once in the future, or a cron
// or an interval of 5 s or more; and a keyword is only ever taken for a
// schedule when it parses or is answered with why not.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"18:00 run tests", "2026-12-01 09:30 x", "weekday 9:00 y", "mondays 7:05 z", "2h check", "5s ping", "25:00 x", "0:00", "99999m x"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 24, 17, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, arg string) {
		for _, kw := range []string{At, Every} {
			s, err := ParseSchedule(kw, arg, now, time.UTC)
			if err != nil {
				continue
			}
			if s.Text == "" || s.When == "" {
				t.Fatalf("%s %q: %+v has nothing to run or no when", kw, arg, s)
			}
			switch kinds := btoi(!s.At.IsZero()) + btoi(s.Cron != "") + btoi(s.Every > 0); {
			case kinds != 1:
				t.Fatalf("%s %q: %+v is not exactly one kind of schedule", kw, arg, s)
			case !s.At.IsZero() && !s.At.After(now):
				t.Fatalf("%s %q: at %v, not after now", kw, arg, s.At)
			case s.Every > 0 && s.Every < 5*time.Second:
				t.Fatalf("%s %q: every %v", kw, arg, s.Every)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

package fsm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
		{Every, "90s ping", Schedule{Text: "ping", Every: 90 * time.Second, When: "every 1m 30s"}},
		// Forms people type: am/pm clocks, a day before or after the
		// clock, a weekday, a time from now.
		{At, "6pm echo later-please", Schedule{Text: "echo later-please", At: time.Date(2026, 11, 24, 18, 0, 0, 0, paris), When: "at Tue 24 Nov 18:00 (Europe/Paris)"}},
		{At, "6:30PM, call", Schedule{Text: "call", At: time.Date(2026, 11, 24, 18, 30, 0, 0, paris), When: "at Tue 24 Nov 18:30 (Europe/Paris)"}},
		{At, "6 pm call", Schedule{Text: "call", At: time.Date(2026, 11, 24, 18, 0, 0, 0, paris), When: "at Tue 24 Nov 18:00 (Europe/Paris)"}},
		{At, "5am early", Schedule{Text: "early", At: time.Date(2026, 11, 25, 5, 0, 0, 0, paris), When: "at Wed 25 Nov 05:00 (Europe/Paris)"}},
		{At, "12am midnight run", Schedule{Text: "midnight run", At: time.Date(2026, 11, 25, 0, 0, 0, 0, paris), When: "at Wed 25 Nov 00:00 (Europe/Paris)"}},
		{At, "12pm lunch", Schedule{Text: "lunch", At: time.Date(2026, 11, 25, 12, 0, 0, 0, paris), When: "at Wed 25 Nov 12:00 (Europe/Paris)"}},
		{At, "noon lunch", Schedule{Text: "lunch", At: time.Date(2026, 11, 25, 12, 0, 0, 0, paris), When: "at Wed 25 Nov 12:00 (Europe/Paris)"}},
		{At, "18:00 tomorrow echo y", Schedule{Text: "echo y", At: time.Date(2026, 11, 25, 18, 0, 0, 0, paris), When: "at Wed 25 Nov 18:00 (Europe/Paris)"}},
		{At, "tomorrow 9:00 standup", Schedule{Text: "standup", At: time.Date(2026, 11, 25, 9, 0, 0, 0, paris), When: "at Wed 25 Nov 09:00 (Europe/Paris)"}},
		{At, "Tomorrow at 9am standup", Schedule{Text: "standup", At: time.Date(2026, 11, 25, 9, 0, 0, 0, paris), When: "at Wed 25 Nov 09:00 (Europe/Paris)"}},
		{At, "today 8pm deploy", Schedule{Text: "deploy", At: time.Date(2026, 11, 24, 20, 0, 0, 0, paris), When: "at Tue 24 Nov 20:00 (Europe/Paris)"}},
		{At, "monday 9am plan", Schedule{Text: "plan", At: time.Date(2026, 11, 30, 9, 0, 0, 0, paris), When: "at Mon 30 Nov 09:00 (Europe/Paris)"}},
		{At, "9am on friday review", Schedule{Text: "review", At: time.Date(2026, 11, 27, 9, 0, 0, 0, paris), When: "at Fri 27 Nov 09:00 (Europe/Paris)"}},
		{At, "tuesday 18:00 today still", Schedule{Text: "today still", At: time.Date(2026, 11, 24, 18, 0, 0, 0, paris), When: "at Tue 24 Nov 18:00 (Europe/Paris)"}},
		{At, "tuesday 9:00 next week", Schedule{Text: "next week", At: time.Date(2026, 12, 1, 9, 0, 0, 0, paris), When: "at Tue 1 Dec 09:00 (Europe/Paris)"}},
		{At, "2026-12-01 6:30pm release", Schedule{Text: "release", At: time.Date(2026, 12, 1, 18, 30, 0, 0, paris), When: "at Tue 1 Dec 18:30 (Europe/Paris)"}},
		{At, "in 2h check the deploy", Schedule{Text: "check the deploy", At: time.Date(2026, 11, 24, 19, 30, 0, 0, paris), When: "at Tue 24 Nov 19:30 (Europe/Paris)"}},
		{At, "in 30 minutes stretch", Schedule{Text: "stretch", At: time.Date(2026, 11, 24, 18, 0, 0, 0, paris), When: "at Tue 24 Nov 18:00 (Europe/Paris)"}},
		{At, "in 1 hour ping", Schedule{Text: "ping", At: time.Date(2026, 11, 24, 18, 30, 0, 0, paris), When: "at Tue 24 Nov 18:30 (Europe/Paris)"}},
		{At, "in 90s ping", Schedule{Text: "ping", At: time.Date(2026, 11, 24, 17, 31, 30, 0, paris), When: "at Tue 24 Nov 17:31:30 (Europe/Paris)"}},
		{Every, "monday 9am plan the week", Schedule{Text: "plan the week", Cron: "0 0 9 * * 1", When: "every monday at 09:00 (Europe/Paris)"}},
		{Every, "day at 6:30 pm wrap up", Schedule{Text: "wrap up", Cron: "0 30 18 * * *", When: "every day at 18:30 (Europe/Paris)"}},
		{Every, "2 hours look", Schedule{Text: "look", Every: 2 * time.Hour, When: "every 2h"}},
		{Every, "30 minutes ping", Schedule{Text: "ping", Every: 30 * time.Minute, When: "every 30m"}},
		{Every, "1h30m ping", Schedule{Text: "ping", Every: 90 * time.Minute, When: "every 1h 30m"}},
	} {
		got, err := ParseSchedule(c.kw, c.arg, now, paris)
		if err != nil || got.Text != c.want.Text || !got.At.Equal(c.want.At) || got.Cron != c.want.Cron || got.Every != c.want.Every || got.When != c.want.When {
			t.Errorf("%s %s: got %+v, %v; want %+v", c.kw, c.arg, got, err, c.want)
		}
	}
	for _, c := range []struct{ kw, arg string }{
		{At, "18:00"}, {At, "25:00 x"}, {At, "2026-11-01 09:00 past"}, {At, "2026-13-01 09:00 x"},
		{Every, "weekday x"}, {Every, "fortnight 9:00 x"}, {Every, "2s too often"}, {Every, "day 9:00"},
		{At, "today 9:00 already past"}, {At, "in 2h"},
	} {
		if s, err := ParseSchedule(c.kw, c.arg, now, paris); err == nil {
			t.Errorf("%s %s: got %+v; want an error", c.kw, c.arg, s)
		}
	}
	for _, c := range []struct{ kw, arg string }{
		{At, "25:99 echo bad"}, {At, "6xm x"}, {At, "13pm x"}, {At, "0am x"}, {At, "6 run the backup"},
		{At, "tomorrow echo x"}, {At, "tomorow 9am x"}, {At, "monday 25:00 x"}, {At, "18:00 pm x"},
		{Every, "monday 13pm x"}, {Every, "day 6xm x"}, {Every, "2 hourz x"},
	} {
		if s, err := ParseSchedule(c.kw, c.arg, now, paris); !errors.Is(err, ErrSchedule) {
			t.Errorf("%s %s: got %+v, %v; want ErrSchedule", c.kw, c.arg, s, err)
		}
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
		// A time that reads, or one that looks like a time and does not:
		// both are schedules (the second answered with how to say when),
		// never a task run now.
		"at 6pm echo later-please":          At,
		"at 6 pm echo x":                    At,
		"at 18:00\nrun the tests":           At,
		"at tomorrow 9:00 standup":          At,
		"at monday 9am plan":                At,
		"at noon lunch":                     At,
		"in 2h check the deploy":            At,
		"In 30 minutes stretch":             At,
		"every monday 9am plan":             Every,
		"every 30 minutes ping":             Every,
		"at 25:99 echo bad":                 At,
		"at 6xm echo x":                     At,
		"at 13pm echo x":                    At,
		"at 6 run the backup":               At,
		"at 2026-13-45 09:00 x":             At,
		"at tomorow 9am x":                  At,
		"at 9h30 x":                         At,
		"every 1h30m x":                     Every,
		"every 2 hourz x":                   "",
		"at least run the tests":            "",
		"at 1st glance this is wrong, fix":  "",
		"at 100% CPU the tests hang":        "",
		"at line 42 fix the bug":            "",
		"every file in src needs a license": "",
		"every 2 files, add a blank line":   "",
		"in src, rename foo to bar":         "",
		"in 3 places the name is wrong":     "",
		"schedules":                         Schedules,
		"unschedule 3f2a9c":                 Unschedule,
		"tz Europe/Paris":                   Zone,
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
// or an interval of 5 s or more; and whatever reads as a schedule is taken
// for one, never run at once as a message.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"18:00 run tests", "2026-12-01 09:30 x", "weekday 9:00 y", "mondays 7:05 z", "2h check", "5s ping", "25:00 x", "0:00", "99999m x",
		"6pm x", "6:30 PM, x", "12am x", "noon x", "18:00 tomorrow x", "tomorrow at 9am x", "monday 9am x", "9am on friday x", "in 2h x", "in 30 minutes x", "day at 6 pm x", "2 hours x"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 24, 17, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, arg string) {
		for _, kw := range []string{At, Every} {
			s, err := ParseSchedule(kw, arg, now, time.UTC)
			if err != nil {
				continue
			}
			if k, _, ok := ParseKeyword(kw + " " + arg); !ok || k != kw {
				t.Fatalf("%s %q reads as %+v but is not taken for a schedule (%q)", kw, arg, s, k)
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

// FuzzClock: a clock after at is read as a 12- or 24-hour clock says, or
// answered with how to say when; never taken for a message.
func FuzzClock(f *testing.F) {
	f.Add(6, 0, "pm", false)
	f.Add(12, 30, "am", true)
	f.Add(25, 99, "", false)
	f.Add(13, 0, "pm", false)
	f.Add(0, 0, "am", false)
	f.Add(23, 59, "", false)
	now := time.Date(2026, 11, 24, 17, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, h, m int, suffix string, spaced bool) {
		if h < 0 || h > 99 || m < 0 || m > 99 || !slices.Contains([]string{"", "am", "pm", "AM", "p.m."}, suffix) {
			return
		}
		word := fmt.Sprintf("%d:%02d", h, m)
		if suffix != "" && spaced {
			word += " " + suffix
		} else {
			word += suffix
		}
		wantH, valid := h, h < 24 && m < 60
		if suffix != "" {
			wantH, valid = h%12, h >= 1 && h <= 12 && m < 60
			if strings.HasPrefix(strings.ToLower(suffix), "p") {
				wantH += 12
			}
		}
		if k, _, _ := ParseKeyword("at " + word + " echo x"); k != At {
			t.Fatalf("at %s echo x: keyword %q; want at", word, k)
		}
		s, err := ParseSchedule(At, word+" echo x", now, time.UTC)
		switch {
		case !valid && !errors.Is(err, ErrSchedule):
			t.Fatalf("at %s: %+v, %v; want ErrSchedule", word, s, err)
		case valid && (err != nil || s.At.Hour() != wantH || s.At.Minute() != m || s.Text != "echo x"):
			t.Fatalf("at %s: %+v, %v; want %02d:%02d", word, s, err, wantH, m)
		}
	})
}

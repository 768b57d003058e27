package fsm

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
)

// Schedule is a message the person asked to send later, once (At) or again
// and again (Cron in the schedule's time zone, or Every).
type Schedule struct {
	Text  string
	At    time.Time
	Cron  string // seconds minutes hours day-of-month month day-of-week
	Every time.Duration
	// When says when it runs, for the person.
	When string
}

// looksScheduled reports whether the words after "at" or "every" start
// with a time, read or not ("at 18:00 …", "at 6xm …", "every weekday
// 9:00 …"), so that "at the top of the file, add …" stays a message for
// the agent and a time mistyped is answered, never run at once.
func looksScheduled(kw, rest string) bool {
	return timeLike(kw, lower(strings.Fields(rest)))
}

// ParseSchedule reads the words after at or every, now, in loc. After at
// come a day and a clock in either order ("tomorrow 9am", "18:00
// tomorrow"), or "in" and a length of time. Words it cannot read as a
// time are ErrSchedule; the other refusals (nothing to do, too often)
// say what to change.
func ParseSchedule(kw, arg string, now time.Time, loc *time.Location) (Schedule, error) {
	words := strings.Fields(arg)
	now = now.In(loc)
	if kw == Every {
		return parseEvery(words, lower(words), loc)
	}
	w := lower(words)
	if len(w) > 0 && w[0] == "in" {
		d, n, ok := span(w[1:])
		if !ok {
			return Schedule{}, ErrSchedule
		}
		return once(now.Add(d).Truncate(time.Second), words[1+n:], loc)
	}
	date, roll, n, dayFirst := day(w, now)
	if dayFirst && len(w) > n && w[n] == "at" {
		n++
	}
	c, k, ok := clock(w[n:])
	if !ok {
		return Schedule{}, ErrSchedule
	}
	if n += k; !dayFirst {
		// The day may follow: "18:00 tomorrow", "9am on friday".
		m := n
		if m < len(w) && w[m] == "on" {
			m++
		}
		if d, r, k, ok := day(w[m:], now); ok {
			date, roll, n = d, r, m+k
		}
	}
	at := time.Date(date.Year(), date.Month(), date.Day(), c.h, c.m, c.s, 0, loc)
	if !at.After(now) {
		if roll == 0 {
			return Schedule{}, fmt.Errorf("%s is past", at.Format("Mon 2 Jan 2006 15:04"))
		}
		at = at.AddDate(0, 0, roll)
	}
	return once(at, words[n:], loc)
}

// once is a schedule that runs text at a time.
func once(at time.Time, text []string, loc *time.Location) (Schedule, error) {
	layout := "Mon 2 Jan 15:04"
	if at.Second() != 0 {
		layout += ":05"
	}
	s := Schedule{At: at, Text: strings.Join(text, " "), When: "at " + at.Format(layout) + " (" + loc.String() + ")"}
	return s, nonEmpty(s)
}

// parseEvery reads the words after every: a length of time ("2h", "30
// minutes"), or days and a clock ("weekday 9:00", "monday at 9am").
func parseEvery(words, w []string, loc *time.Location) (Schedule, error) {
	var s Schedule
	if d, n, ok := span(w); ok {
		s.Every, s.Text = d, strings.Join(words[n:], " ")
		if s.Every < 5*time.Second {
			return s, errors.New("every 5s at the most often")
		}
		s.When = "every " + contract.Duration(s.Every)
		return s, nonEmpty(s)
	}
	if len(w) == 0 {
		return s, ErrSchedule
	}
	name := strings.TrimSuffix(w[0], "s")
	dow, ok := days[name]
	n := 1
	if len(w) > n && w[n] == "at" {
		n++
	}
	c, k, okc := clock(w[n:])
	if !ok || !okc {
		return s, ErrSchedule
	}
	s.Cron, s.Text = fmt.Sprintf("%d %d %d * * %s", c.s, c.m, c.h, dow), strings.Join(words[n+k:], " ")
	s.When = fmt.Sprintf("every %s at %02d:%02d (%s)", name, c.h, c.m, loc)
	return s, nonEmpty(s)
}

func nonEmpty(s Schedule) error {
	if s.Text == "" {
		return errors.New("say what to do, after when")
	}
	return nil
}

package fsm

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
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

// ErrSchedule: a schedule that cannot be read.
var ErrSchedule = errors.New(`say when: "at 18:00 <task>", "at 2026-12-01 09:30 <task>", "every day 9:00 <task>", "every weekday 9:00 <task>", "every monday 9:00 <task>" or "every 2h <task>"`)

var (
	clockRE = regexp.MustCompile(`^([01]?[0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9]))?$`)
	dateRE  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	everyRE = regexp.MustCompile(`^([1-9][0-9]{0,3})(s|m|min|h)$`)
	days    = map[string]string{"day": "*", "weekday": "1-5", "weekend": "0,6",
		"sunday": "0", "monday": "1", "tuesday": "2", "wednesday": "3", "thursday": "4", "friday": "5", "saturday": "6"}
)

// looksScheduled reports whether the words after "at" or "every" start a
// schedule ("at 18:00 …", "every weekday 9:00 …"), so that "at the top of
// the file, add …" stays a message for the agent.
func looksScheduled(kw, rest string) bool {
	first, _, _ := strings.Cut(rest, " ")
	first = strings.ToLower(first)
	if kw == At {
		return clockRE.MatchString(first) || dateRE.MatchString(first)
	}
	_, day := days[strings.TrimSuffix(first, "s")]
	return day || everyRE.MatchString(first)
}

// ParseSchedule reads the words after at or every, now, in loc.
func ParseSchedule(kw, arg string, now time.Time, loc *time.Location) (Schedule, error) {
	words := strings.Fields(arg)
	now = now.In(loc)
	sec := 0
	clock := func(w string) (h, m int, ok bool) {
		sub := clockRE.FindStringSubmatch(w)
		if sub == nil {
			return 0, 0, false
		}
		h, _ = strconv.Atoi(sub[1])
		m, _ = strconv.Atoi(sub[2])
		sec, _ = strconv.Atoi(sub[3])
		return h, m, true
	}
	text := func(n int) string { return strings.TrimSpace(strings.Join(words[n:], " ")) }
	var s Schedule
	switch {
	case kw == At && len(words) >= 3 && dateRE.MatchString(words[0]):
		day, err := time.ParseInLocation("2006-01-02", words[0], loc)
		h, m, ok := clock(words[1])
		if err != nil || !ok {
			return s, ErrSchedule
		}
		s.At, s.Text = time.Date(day.Year(), day.Month(), day.Day(), h, m, sec, 0, loc), text(2)
		if !s.At.After(now) {
			return s, fmt.Errorf("%s is past", s.At.Format("Mon 2 Jan 2006 15:04"))
		}
	case kw == At && len(words) >= 2:
		h, m, ok := clock(words[0])
		if !ok {
			return s, ErrSchedule
		}
		s.At = time.Date(now.Year(), now.Month(), now.Day(), h, m, sec, 0, loc)
		if !s.At.After(now) {
			s.At = s.At.AddDate(0, 0, 1)
		}
		s.Text = text(1)
	case kw == Every && len(words) >= 2 && everyRE.MatchString(strings.ToLower(words[0])):
		sub := everyRE.FindStringSubmatch(strings.ToLower(words[0]))
		n, _ := strconv.Atoi(sub[1])
		unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour}[sub[2]]
		s.Every, s.Text = time.Duration(n)*unit, text(1)
		if s.Every < 5*time.Second {
			return s, errors.New("every 5s at the most often")
		}
		s.When = "every " + short(s.Every)
		return s, nonEmpty(s)
	case kw == Every && len(words) >= 3:
		name := strings.TrimSuffix(strings.ToLower(words[0]), "s")
		dow, ok := days[name]
		h, m, okc := clock(words[1])
		if !ok || !okc {
			return s, ErrSchedule
		}
		s.Cron, s.Text = fmt.Sprintf("0 %d %d * * %s", m, h, dow), text(2)
		s.When = fmt.Sprintf("every %s at %02d:%02d (%s)", name, h, m, loc)
		return s, nonEmpty(s)
	default:
		return s, ErrSchedule
	}
	layout := "Mon 2 Jan 15:04"
	if sec != 0 {
		layout += ":05"
	}
	s.When = "at " + s.At.Format(layout) + " (" + loc.String() + ")"
	return s, nonEmpty(s)
}

func nonEmpty(s Schedule) error {
	if s.Text == "" {
		return errors.New("say what to do, after when")
	}
	return nil
}

// short writes 2h0m0s as 2h and 30m0s as 30m.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

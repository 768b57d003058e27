package fsm

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Reading the times people type after at, in and every. Each reader takes
// the words (lower case) at the start of a message and says how many it
// used.

var (
	clockRE    = regexp.MustCompile(`^([01]?[0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9]))?$`)
	clock12RE  = regexp.MustCompile(`^(0?[1-9]|1[0-2])(?::([0-5][0-9]))?(am|pm|a\.m\.|p\.m\.)$`)
	meridiemRE = regexp.MustCompile(`^(am|pm|a\.m\.|p\.m\.)$`)
	dateRE     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	spanRE     = regexp.MustCompile(`^([1-9][0-9]{0,3})(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|days?)?$`)
	hmsRE      = regexp.MustCompile(`^(\d{1,4}h)?(\d{1,4}m)?(\d{1,4}s)?$`)
	unitRE     = regexp.MustCompile(`^(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|days?)$`)
	weekdays   = map[string]time.Weekday{"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday,
		"wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday}
	// days are the days every runs on, as cron's day of week.
	days = map[string]string{"day": "*", "weekday": "1-5", "weekend": "0,6",
		"sunday": "0", "monday": "1", "tuesday": "2", "wednesday": "3", "thursday": "4", "friday": "5", "saturday": "6"}
)

// hms is a time of day.
type hms struct{ h, m, s int }

// lower is words in lower case, without the comma or colon that may end
// a time ("at 6pm, run …").
func lower(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = strings.TrimRight(strings.ToLower(w), ",:")
	}
	return out
}

// clock reads a time of day: 18:00, 9:05:30, 6pm, 6:30pm, 6 pm, noon or
// midnight.
func clock(w []string) (c hms, n int, ok bool) {
	if len(w) == 0 {
		return c, 0, false
	}
	switch w[0] {
	case "noon":
		return hms{h: 12}, 1, true
	case "midnight":
		return hms{}, 1, true
	}
	if len(w) > 1 && meridiemRE.MatchString(w[1]) {
		sub := clock12RE.FindStringSubmatch(w[0] + w[1])
		return twelve(sub), 2, sub != nil
	}
	if sub := clock12RE.FindStringSubmatch(w[0]); sub != nil {
		return twelve(sub), 1, true
	}
	sub := clockRE.FindStringSubmatch(w[0])
	if sub == nil {
		return c, 0, false
	}
	c.h, _ = strconv.Atoi(sub[1])
	c.m, _ = strconv.Atoi(sub[2])
	c.s, _ = strconv.Atoi(sub[3])
	return c, 1, true
}

// twelve is the time of a 12-hour clock's match: 12am is 00:00, 12pm noon.
func twelve(sub []string) (c hms) {
	if sub == nil {
		return c
	}
	c.h, _ = strconv.Atoi(sub[1])
	c.m, _ = strconv.Atoi(sub[2])
	c.h %= 12
	if sub[3][0] == 'p' {
		c.h += 12
	}
	return c
}

// day reads the day of an at: today, tomorrow, a weekday (the next one,
// today if the time is still ahead) or 2026-12-01. date is that day's
// date and roll how many days later the time goes when it is past on
// that date (0: it is past).
func day(w []string, now time.Time) (date time.Time, roll, n int, ok bool) {
	if len(w) == 0 {
		return now, 1, 0, false
	}
	if wd, ok := weekdays[w[0]]; ok {
		return now.AddDate(0, 0, (int(wd)-int(now.Weekday())+7)%7), 7, 1, true
	}
	switch {
	case w[0] == "today":
		return now, 0, 1, true
	case w[0] == "tomorrow":
		return now.AddDate(0, 0, 1), 0, 1, true
	case dateRE.MatchString(w[0]):
		d, err := time.ParseInLocation("2006-01-02", w[0], now.Location())
		return d, 0, 1, err == nil
	}
	return now, 1, 0, false
}

// span reads a length of time: 2h, 90s, 1h30m, 30 minutes, 1 hour, 2 days.
func span(w []string) (d time.Duration, n int, ok bool) {
	if len(w) == 0 {
		return 0, 0, false
	}
	sub := spanRE.FindStringSubmatch(w[0])
	if sub == nil {
		if !hmsRE.MatchString(w[0]) {
			return 0, 0, false
		}
		d, err := time.ParseDuration(w[0])
		return d, 1, err == nil && d > 0
	}
	unit, n := sub[2], 1
	if unit == "" {
		if len(w) < 2 || !unitRE.MatchString(w[1]) {
			return 0, 0, false
		}
		unit, n = w[1], 2
	}
	count, _ := strconv.Atoi(sub[1])
	per := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[unit[0]]
	return time.Duration(count) * per, n, true
}

var (
	ordinalRE = regexp.MustCompile(`^\d+(st|nd|rd|th)$`)
	timeishRE = regexp.MustCompile(`^\d[\d:.\-/]*([a-z.\d]*)$`)
	numberRE  = regexp.MustCompile(`^\d{1,9}$`)
	dateishRE = regexp.MustCompile(`^\d{4}-|^\d{1,2}/\d{1,2}`)
)

// timeLike reports whether the words after kw start with a time: one
// that reads, or one meant as a time that does not (25:99, 6xm, 13pm,
// 2026-13-45, 9h30, "6" alone after at, "tomorow 9am"). "at the
// top", "at least", "at 1st glance", "at 100% CPU", "every 2 files",
// "every file" are not.
func timeLike(kw string, w []string) bool {
	if len(w) == 0 {
		return false
	}
	if kw == Every {
		_, isDay := days[strings.TrimSuffix(w[0], "s")]
		_, _, isSpan := span(w)
		if isDay || isSpan {
			return true
		}
	} else {
		_, _, _, isDay := day(w, time.Time{})
		_, _, isClock := clock(w)
		_, _, isSpan := span(w[1:])
		if isDay || isClock || w[0] == "in" && isSpan {
			return true
		}
	}
	sub := timeishRE.FindStringSubmatch(w[0])
	switch {
	case sub == nil || ordinalRE.MatchString(w[0]):
	case strings.Contains(w[0], ":") || dateishRE.MatchString(w[0]) || strings.ContainsAny(sub[1], "apmh"):
		return true
	case numberRE.MatchString(w[0]):
		if h, _ := strconv.Atoi(w[0]); kw == At && h <= 24 {
			return true
		}
		return len(w) > 1 && (meridiemRE.MatchString(w[1]) || unitRE.MatchString(w[1]))
	}
	_, _, clockNext := clock(w[1:])
	return clockNext
}

// How textslash writes numbers for people, the one home of it: a
// duration as "1h 30m" (Duration), a count with its noun (Plural).

package contract

import (
	"fmt"
	"strings"
	"time"
)

// Duration writes d as a person reads it: "45s", "12m", "1h", "1h 30m",
// "2h 0m 5s" never (zero parts are left out: "2h 5s"). It is whole seconds,
// rounded; under a second it is milliseconds ("250ms"), and "0s" for none.
func Duration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var parts []string
	switch {
	case d == 0:
		parts = []string{"0s"}
	case d < time.Second:
		parts = []string{fmt.Sprintf("%dms", d.Round(time.Millisecond)/time.Millisecond)}
	default:
		d = d.Round(time.Second)
		for _, u := range []struct {
			unit time.Duration
			name string
		}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
			if n := d / u.unit; n > 0 {
				parts = append(parts, fmt.Sprintf("%d%s", n, u.name))
				d -= n * u.unit
			}
		}
	}
	if neg {
		parts[0] = "-" + parts[0]
	}
	return strings.Join(parts, " ")
}

// Plural writes n and its noun, the noun with an s unless n is 1: "1 link",
// "3 links", "0 runs". A noun whose plural is not noun+s gives it as
// plural: Plural(2, "process", "processes").
func Plural(n int, noun string, plural ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(plural) > 0 {
		return fmt.Sprintf("%d %s", n, plural[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

package contract

import (
	"testing"
	"time"
)

func TestDurationReadsAsAPersonWritesIt(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{250 * time.Millisecond, "250ms"},
		{45 * time.Second, "45s"},
		{45*time.Second + 400*time.Millisecond, "45s"},
		{time.Minute, "1m"},
		{90 * time.Second, "1m 30s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h 30m"},
		{2*time.Hour + 5*time.Second, "2h 5s"},
		{49 * time.Hour, "49h"},
		{-5 * time.Minute, "-5m"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q; want %q", tc.d, got, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n     int
		noun  string
		extra []string
		want  string
	}{
		{0, "run", nil, "0 runs"},
		{1, "link", nil, "1 link"},
		{2, "link", nil, "2 links"},
		{1, "process", []string{"processes"}, "1 process"},
		{3, "process", []string{"processes"}, "3 processes"},
	} {
		if got := Plural(tc.n, tc.noun, tc.extra...); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q; want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

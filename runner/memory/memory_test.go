package memory

import (
	"testing"
	"time"
)

// TryTake counts one in only when it fits now and no run waits, and never
// makes room: what it is for (homes made again after a restart) must not
// go before a run or push out what someone used.
func TestTryTakeNeverMakesRoom(t *testing.T) {
	for _, tc := range []struct {
		name      string
		available int64
		waiting   bool
		want      bool
	}{
		{"room", 10, false, true},
		{"no room", 2, false, false},
		{"a run waits", 10, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			letGo := 0
			g := &Gate{Cost: 3, Free: 1, Available: func() int64 { return tc.available }, LetGo: func() (string, bool) { letGo++; return "", false }}
			if tc.waiting {
				g.queue = append(g.queue, &ticket{})
			}
			if got := g.TryTake(); got != tc.want {
				t.Errorf("TryTake: got %v; want %v", got, tc.want)
			}
			if letGo != 0 {
				t.Errorf("LetGo called %d times; want never", letGo)
			}
		})
	}
	// What it took is counted ahead, before the machine's numbers show it.
	g := &Gate{Cost: 3, Free: 1, Available: func() int64 { return 9 }}
	if !g.TryTake() || !g.TryTake() || g.TryTake() {
		t.Errorf("three TryTakes of 3 in 9 with 1 left free: want the first two to fit, not the third")
	}
}

// The machine's memory is read once for runs admitted together, not once
// a run: a read is five files of /proc and /sys (a twentieth of the
// runner's CPU in BenchmarkCapacity/closed-loop-64, read per run), and the
// runs taken meanwhile are counted ahead all the same. Once something is
// let go to make room, or Fresh has passed, it is read again.
func TestAvailableReadOncePerFresh(t *testing.T) {
	reads, avail := 0, int64(100)
	g := &Gate{Cost: 3, Free: 1, Available: func() int64 { reads++; return avail }}
	for range 10 {
		if err := g.Wait(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Errorf("10 runs admitted at once read the memory %d times; want 1", reads)
	}
	time.Sleep(Fresh)
	if !g.TryTake() || reads != 2 {
		t.Errorf("after Fresh: %d reads; want 2", reads)
	}

	// Full: what is let go shows at the next look.
	reads, avail = 0, 3
	letGo := 0
	g = &Gate{Cost: 3, Free: 1, Available: func() int64 { reads++; return avail },
		LetGo: func() (string, bool) { letGo++; avail = 100; return "a warm agent", true }}
	if err := g.Wait(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if letGo != 1 || reads != 2 {
		t.Errorf("a run admitted once room was made: %d let go, %d reads; want 1 and 2", letGo, reads)
	}
}

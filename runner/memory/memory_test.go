package memory

import "testing"

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

// Package clock has a run's clocks: one pulse for what is done now and
// then while the run lasts (Pulse), its time limit, which stops while the
// run waits for the person (Deadline), and its progress, which says
// "still working" when the run is quiet for a heartbeat (Progress).
package clock

// Package clock has a run's clocks: one pulse for what is done now and
// then while the run lasts (Pulse), and its time limit, which stops while
// the run waits for the person (Deadline).
package clock

// Package script is the script engine of the scripted model APIs
// (claudetest, geminitest, openaitest): turns answered in order, one per
// request of the main conversation, and every request kept.
package script

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Script holds a scripted model's turns T and the requests R it received.
type Script[T, R any] struct {
	t       testing.TB
	name    string
	repeats func(T) bool

	mu    sync.Mutex
	turns []T
	next  int // the next turn to answer
	reqs  []R
	ids   int
}

// New is a script of turns for the stand-in name ("claudetest"). fault
// says what is wrong with a turn (its tool's arguments not a JSON
// object), which fails the test; repeats whether a last turn answers
// every later request too (an API error: clients retry).
func New[T, R any](t testing.TB, name string, turns []T, fault func(T) error, repeats func(T) bool) *Script[T, R] {
	t.Helper()
	for i, tr := range turns {
		if err := fault(tr); err != nil {
			t.Fatalf("%s: turn %d %v", name, i, err)
		}
	}
	return &Script[T, R]{t: t, name: name, repeats: repeats, turns: turns}
}

// Set replaces turn i before it is answered: for arguments known only
// once the test runs (a workspace's absolute path). fault is New's.
func (s *Script[T, R]) Set(i int, tr T, fault func(T) error) {
	s.t.Helper()
	if err := fault(tr); err != nil {
		s.t.Fatalf("%s: turn %d %v", s.name, i, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < s.next || i >= len(s.turns) {
		s.t.Fatalf("%s: SetTurn(%d): answered already or past the script's %d turns", s.name, i, len(s.turns))
	}
	s.turns[i] = tr
}

// Next is the turn that answers the next main request (what names it, for
// the test's failure), and its index: the script's next turn, else its
// last again when that repeats. ok is false past the script's end, which
// fails the test (i is -1 then).
func (s *Script[T, R]) Next(what string) (tr T, i int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch n := len(s.turns); {
	case s.next < n:
		s.next++
		return s.turns[s.next-1], s.next - 1, true
	case n > 0 && s.repeats(s.turns[n-1]):
		return s.turns[n-1], n - 1, true
	}
	s.t.Errorf("%s: main request %s past the end of the %d-turn script", s.name, what, len(s.turns))
	return tr, -1, false
}

// Answered is how many scripted turns have been answered.
func (s *Script[T, R]) Answered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Record keeps r.
func (s *Script[T, R]) Record(r R) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

// Requests are every request kept so far, in order.
func (s *Script[T, R]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]R(nil), s.reqs...)
}

// NewID numbers answers, from 1.
func (s *Script[T, R]) NewID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return s.ids
}

// Wait waits d, a turn's delay, unless ctx (the request's) ends first:
// false then.
func Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

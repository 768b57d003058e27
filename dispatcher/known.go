package dispatcher

import (
	"sync"

	"github.com/textslash/textslash/contract"
)

// known is what this dispatcher last read or wrote of each person's state,
// with its revision, and whether their queue was empty at that revision:
// a message and its run's end then read nothing back from JetStream.
//
// A copy gone stale (another dispatcher wrote since) cannot do harm where
// the state changes: the compare-and-set fails and apply reads it again.
// A decision that changes nothing is taken again from a fresh read. The
// queue can only grow through an inbound message's enqueue, which writes
// the state too; one enqueued by a dispatcher that crashed before writing
// it comes back with its redelivered message, which this dispatcher then
// enqueues (a duplicate) and writes.
type known struct {
	mu    sync.Mutex
	users map[string]knownState
}

type knownState struct {
	data  []byte // the state as stored: decoded anew for each use, never shared
	rev   uint64
	empty bool // the queue was empty at rev
}

// knownMax bounds the memory: past it, everything is forgotten at once (a
// person is then read once more).
const knownMax = 100_000

func (k *known) get(u contract.User) (knownState, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.users[u.Key()]
	return s, ok
}

// put remembers u's state data at rev, its queue not known to be empty.
func (k *known) put(u contract.User, data []byte, rev uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.users == nil || len(k.users) >= knownMax {
		k.users = map[string]knownState{}
	}
	k.users[u.Key()] = knownState{data: data, rev: rev}
}

// emptyAt notes that u's queue is empty at revision rev of its state.
func (k *known) emptyAt(u contract.User, rev uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s, ok := k.users[u.Key()]; ok && s.rev == rev {
		s.empty = true
		k.users[u.Key()] = s
	}
}

func (k *known) forget(u contract.User) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.users, u.Key())
}

package memory

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A signal lets the goroutines of one update wait for each other: a
// goroutine waits until a condition holds (wait), the goroutines that make
// conditions true say so (notify). A wait spins for a few microseconds
// first, as most waits between the two goroutines of an update are that
// short, then sleeps: when another process wants a core, a goroutine that
// kept spinning would burn the time slice the other one needs (with one
// busy process beside it, an update spinning throughout is several times
// slower).
type signal struct {
	mu      sync.Mutex
	cond    *sync.Cond
	waiters atomic.Int32
}

// spinRounds is how many times wait checks its condition, yielding to other
// goroutines in between, before it sleeps (about 10-20 us).
const spinRounds = 100

// newSignal returns a signal.
func newSignal() *signal {
	s := &signal{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// notify wakes the goroutines waiting on s, if any, to check their
// conditions again. Call it after making a condition true.
func (s *signal) notify() {
	if s.waiters.Load() > 0 {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// wait returns when ready() is true; ready must read what the notifying
// goroutines write through atomics (or under s's own ordering).
func (s *signal) wait(ready func() bool) {
	for range spinRounds {
		if ready() {
			return
		}
		runtime.Gosched()
	}
	s.mu.Lock()
	s.waiters.Add(1)
	for !ready() {
		s.cond.Wait()
	}
	s.waiters.Add(-1)
	s.mu.Unlock()
}

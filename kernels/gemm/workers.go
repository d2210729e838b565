package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// share is one thread's part of a call.
type share struct {
	c *call
	t int
}

// worker is a goroutine that runs shares of calls. Workers are reused
// across calls: after a share it waits on the idle list, first spinning for
// workerSpin (polling its task slot and yielding to other goroutines), so
// that back-to-back calls start without waking a parked thread, then parked
// on its wake channel.
type worker struct {
	task  atomic.Pointer[share]
	state atomic.Int32 // workerBusy, workerSpinning or workerParked
	wake  chan struct{}
}

const (
	workerBusy = iota
	workerSpinning
	workerParked
)

// workerSpin is how long an idle worker polls for a new share before it
// parks: long enough to bridge consecutive calls, short enough not to burn
// a core between batches.
const workerSpin = 50 * time.Microsecond

// The idle workers. A share is handed to an idle worker if there is one;
// otherwise a new worker starts. Every share therefore runs at once, which
// the spinning waits rely on. This pool is the package's only mutable
// global state.
var (
	idleMu sync.Mutex
	idle   []*worker
)

// dispatch runs s on an idle worker, or on a new one.
func dispatch(s *share) {
	idleMu.Lock()
	var w *worker
	if n := len(idle); n > 0 {
		w, idle = idle[n-1], idle[:n-1]
	}
	idleMu.Unlock()
	if w == nil {
		w = &worker{wake: make(chan struct{}, 1)}
		w.task.Store(s)
		go w.loop()
		return
	}
	w.task.Store(s)
	if !w.state.CompareAndSwap(workerSpinning, workerBusy) {
		// The worker parked (or is parking): wake it.
		w.state.Store(workerBusy)
		w.wake <- struct{}{}
	}
}

// loop runs shares forever.
func (w *worker) loop() {
	for {
		s := w.task.Swap(nil)
		if s == nil {
			s = w.await()
		}
		c := s.c
		c.run(s.t)
		// Idle before Done, so that the caller's next call finds this worker.
		w.state.Store(workerSpinning)
		idleMu.Lock()
		idle = append(idle, w)
		idleMu.Unlock()
		c.wg.Done()
	}
}

// await waits for the next share: it polls for workerSpin, then parks.
func (w *worker) await() *share {
	start := time.Now()
	for i := 1; ; i++ {
		if w.task.Load() != nil {
			if s := w.task.Swap(nil); s != nil {
				return s
			}
		}
		if i%64 != 0 {
			runtime.Gosched()
			continue
		}
		if time.Since(start) < workerSpin {
			continue
		}
		// Park, unless dispatch already claimed this worker (state busy):
		// its task is then stored and the next poll finds it.
		if w.state.CompareAndSwap(workerSpinning, workerParked) {
			<-w.wake
		}
		if s := w.task.Swap(nil); s != nil {
			return s
		}
		start = time.Now()
	}
}

package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Sharer is work split into shares that run concurrently (RunShares):
// Share(i) runs share i.
type Sharer interface {
	Share(i int)
}

// ShareFunc adapts a function to Sharer.
type ShareFunc func(i int)

// Share calls f(i).
func (f ShareFunc) Share(i int) { f(i) }

// Run calls f(0), ..., f(n-1) concurrently and returns when all have
// returned: see RunShares.
func Run(n int, f func(i int)) { RunShares(n, ShareFunc(f)) }

// RunShares runs shares 0, ..., n-1 of s concurrently, share 0 on the
// caller's goroutine and each other one on a pooled worker goroutine of
// its own, and returns when all have returned. Every share starts at once:
// none waits behind another task, so shares may wait for each other
// (spin on counters other shares advance).
//
// The workers are kept between calls: after a share a worker spins,
// polling for its next share and yielding to other goroutines, then
// parks. A parked worker is a parked OS thread, which the operating system
// may take a long time to wake: on a 2-core VM, where an idle virtual CPU
// halts, a new goroutine per parallel loop costs tens of microseconds a
// loop, and training steps run faster on the pool (BenchmarkRun,
// bench/ab_step.sh; bench/RESULTS.md, "Parallel loops"). How long a worker
// spins is derived from what waking one costs on this machine (see spinFor).
// The caller, once its share is done, likewise spins before it parks
// until the others are done: blocked, it would be woken onto the last
// worker's processor, behind that worker's spin, while its own core idles.
func RunShares(n int, s Sharer) {
	if n <= 1 {
		if n == 1 {
			s.Share(0)
		}
		return
	}
	j := jobs.Get().(*job)
	j.s = s
	if cap(j.tasks) < n-1 {
		j.tasks = make([]task, n-1)
	}
	j.tasks = j.tasks[:n-1]
	j.state.Store(int32(n - 1))
	for i := range j.tasks {
		j.tasks[i] = task{j: j, i: i + 1}
		dispatch(&j.tasks[i])
	}
	s.Share(0)
	j.wait()
	j.s = nil
	jobs.Put(j)
}

// wait returns when every worker's share of the job is done: it spins for
// spinFor, yielding the core to the operating system now and then, and
// parks when that time is up or another process took the core during a
// yield, until the last worker wakes it.
func (j *job) wait() {
	start, spin := time.Now(), spinFor()
	for i := 1; ; i++ {
		v := j.state.Load()
		if v == 0 {
			return
		}
		if i%goschedEvery != 0 {
			continue
		}
		// Let the process's other goroutines (a loader, the background
		// half of a DUEL update) run on this core meanwhile.
		runtime.Gosched()
		if i%checkEvery != 0 || time.Since(start) < spin && !yieldContended() {
			continue
		}
		// Park: the worker whose decrement leaves jobParked alone sends.
		if j.state.CompareAndSwap(v, v|jobParked) {
			<-j.done
			return
		}
	}
}

// finish marks one worker's share done; the last one wakes the caller if
// it parked. It is a worker's last access to the job (which the caller
// may reuse as soon as it sees no share left), but for that wake-up.
func (j *job) finish() {
	if j.state.Add(-1) == jobParked {
		j.done <- struct{}{}
	}
}

// job is one RunShares call: its work, the shares handed to workers and
// their completion. Jobs are recycled so that a call allocates nothing.
type job struct {
	s     Sharer
	tasks []task
	state atomic.Int32  // the workers' shares not done, | jobParked once the caller parks
	done  chan struct{} // the last worker's wake-up of a parked caller
}

// jobParked is the bit of job.state that says the caller parked.
const jobParked = 1 << 30

// task is one share of a job, handed to a worker.
type task struct {
	j     *job
	i     int
	woken int64 // when dispatch woke the parked worker (nanotime), or 0
}

var jobs = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}

// worker is a pooled goroutine that runs tasks (see RunShares).
type worker struct {
	task  atomic.Pointer[task]
	state atomic.Int32 // workerBusy, workerSpinning or workerParked
	wake  chan struct{}
}

const (
	workerBusy = iota
	workerSpinning
	workerParked
)

// Bounds of the time an idle worker polls for a new task before it
// parks: at least minSpin, enough to bridge consecutive parallel loops
// and products on any machine, at most maxSpin, so as not to burn a core
// for long between batches.
const (
	minSpin = 50 * time.Microsecond
	maxSpin = time.Millisecond
)

// wakeCost is the running estimate, in nanoseconds, of how long a parked
// worker takes to start after dispatch wakes it (an exponential average
// of the wake-ups timed, a weight of 1/8 on each new one; lost updates
// between workers do not matter).
var wakeCost atomic.Int64

// spinFor returns how long an idle worker spins before it parks: twice
// the cost of waking it, within [minSpin, maxSpin]. Spinning about as
// long as a wake-up costs is the ski-rental rule: a task that comes
// sooner costs no wake-up, one that comes later costs the wake-up and the
// time spun, at most a few times what the wake-up alone would have. Twice
// rather than once, since the spin burns a core that would otherwise be
// idle, while a wake-up delays the caller.
func spinFor() time.Duration {
	return min(maxSpin, max(minSpin, 2*time.Duration(wakeCost.Load())))
}

// noteWake adds a wake-up that took d to the estimate.
func noteWake(d time.Duration) {
	c := wakeCost.Load()
	wakeCost.Store(c + (int64(d)-c)/8)
}

// A spin polls its condition in a tight loop, yields to the process's
// other goroutines every goschedEvery polls (about a microsecond: a yield
// on every poll has the cores contend for the scheduler's run-queue lock,
// a visible share of a training step's CPU time), and checks its time and
// the operating system's yield every checkEvery polls.
const (
	goschedEvery = 256
	checkEvery   = 16 * goschedEvery
)

// yieldSlow is how long a yield to the operating system takes, at least,
// when it ran another thread: an uncontended sched_yield returns within a
// microsecond or two, a time slice given away takes much longer.
const yieldSlow = 20 * time.Microsecond

// yieldContended yields the core to the operating system and reports
// whether another thread took it meanwhile: the machine is then
// oversubscribed, and spinning would burn time another process needs
// (two training processes of two threads each on 2 cores, `bash
// bench/ab_step.sh --together`: spinning up to the wake-up estimate makes
// their steps slower than a goroutine per loop does, parking on a slow
// yield faster; bench/RESULTS.md, "Parallel loops").
func yieldContended() bool {
	t := nanotime()
	osYield()
	return nanotime()-t > int64(yieldSlow)
}

// epoch is the origin of the pool's clock (monotonic).
var epoch = time.Now()

// nanotime reads the pool's clock.
func nanotime() int64 { return int64(time.Since(epoch)) }

// The idle workers. A task is handed to an idle worker if there is one;
// otherwise a new worker starts, so every task runs at once. This pool
// and its estimate of the wake-up cost are the package's only mutable
// global state.
var (
	idleMu sync.Mutex
	idle   []*worker
)

func init() { wakeCost.Store(int64(minSpin / 2)) }

// dispatch runs t on an idle worker, or on a new one.
func dispatch(t *task) {
	idleMu.Lock()
	var w *worker
	if n := len(idle); n > 0 {
		w, idle = idle[n-1], idle[:n-1]
	}
	idleMu.Unlock()
	if w == nil {
		w = &worker{wake: make(chan struct{}, 1)}
		w.task.Store(t)
		go w.loop()
		return
	}
	w.hand(t)
}

// hand gives t to w, an idle worker dispatch took off the idle list: it
// stores the task, then claims the worker (state workerBusy), which takes
// the task only once it sees the claim. A spinning worker sees it at its
// next poll; a parked one (its move to workerParked came first, and it
// waits on wake) is woken: one wake-up per park, so the send never blocks.
//
// A worker that took the task from the store alone could run it and park
// again before a late claim (the caller descheduled between the two):
// the claim would then overwrite its state with workerBusy and leave it a
// wake-up it never waited for; it would never park again (its move from
// workerSpinning fails), and the next claim's wake-up, finding the
// channel full, would block the caller for ever.
func (w *worker) hand(t *task) {
	t.woken = 0
	w.task.Store(t)
	if w.state.CompareAndSwap(workerSpinning, workerBusy) {
		return
	}
	t.woken = nanotime()
	w.state.Store(workerBusy)
	w.wake <- struct{}{}
}

// loop runs tasks forever: the first, stored before the worker started,
// then each one handed to it.
func (w *worker) loop() {
	t := w.task.Swap(nil)
	for {
		j := t.j
		j.s.Share(t.i)
		// Idle before Done, so that the caller's next call finds this worker.
		w.state.Store(workerSpinning)
		idleMu.Lock()
		idle = append(idle, w)
		idleMu.Unlock()
		j.finish()
		t = w.await()
	}
}

// await waits for the next claim (see hand) and returns its task: it
// polls for spinFor, yielding to other goroutines and now and then to the
// operating system, then parks, at once if another process took the core
// during a yield. A task stored without its claim is not taken.
func (w *worker) await() *task {
	start, spin := time.Now(), spinFor()
	for i := 1; ; i++ {
		if w.state.Load() == workerBusy {
			// Claimed: the task was stored before the claim.
			return w.task.Swap(nil)
		}
		if i%goschedEvery != 0 {
			continue
		}
		runtime.Gosched()
		if i%checkEvery != 0 || time.Since(start) < spin && !yieldContended() {
			continue
		}
		// Park, unless dispatch claimed this worker meanwhile: the next
		// poll then finds the claim.
		if w.state.CompareAndSwap(workerSpinning, workerParked) {
			<-w.wake
			t := w.task.Swap(nil)
			noteWake(time.Duration(nanotime() - t.woken))
			return t
		}
	}
}

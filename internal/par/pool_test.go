package par

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunShares checks that every share runs once, that the shares run at
// once (each waits for all the others to have started, which a pool that
// queued a share behind another would never finish), also from inside a
// share and from several goroutines at a time.
func TestRunShares(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 2, 3, 8, 33} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			var started atomic.Int32
			seen := make([]atomic.Int32, max(n, 0))
			Run(n, func(i int) {
				seen[i].Add(1)
				started.Add(1)
				deadline := time.Now().Add(10 * time.Second)
				for started.Load() < int32(n) {
					if time.Now().After(deadline) {
						t.Errorf("share %d: %d of %d shares started after 10 s", i, started.Load(), n)
						return
					}
				}
			})
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Errorf("share %d ran %d times", i, c)
				}
			}
		})
	}
	t.Run("nested and concurrent", func(t *testing.T) {
		var total atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					Run(3, func(int) {
						Run(2, func(int) { total.Add(1) })
					})
				}
			}()
		}
		wg.Wait()
		if got, want := total.Load(), int32(4*50*3*2); got != want {
			t.Errorf("%d inner shares ran, want %d", got, want)
		}
	})
}

// counter is a Sharer that counts its shares.
type counter struct{ n atomic.Int32 }

func (c *counter) Share(int) { c.n.Add(1) }

// TestRunSharesNoAllocs checks that a call with a Sharer that is a
// pointer allocates nothing once the pool is warm (kernels/gemm's calls
// rely on it).
func TestRunSharesNoAllocs(t *testing.T) {
	c := new(counter)
	RunShares(2, c)
	if a := testing.AllocsPerRun(100, func() { RunShares(2, c) }); a != 0 {
		t.Errorf("%v allocations per call, want 0", a)
	}
}

// TestSpinFor checks the spin's bounds and that it follows the wake-up
// cost measured.
func TestSpinFor(t *testing.T) {
	saved := wakeCost.Load()
	defer wakeCost.Store(saved)
	for _, tc := range []struct {
		cost, want time.Duration
	}{
		{0, minSpin},
		{10 * time.Microsecond, minSpin},
		{100 * time.Microsecond, 200 * time.Microsecond},
		{time.Second, maxSpin},
	} {
		wakeCost.Store(int64(tc.cost))
		if got := spinFor(); got != tc.want {
			t.Errorf("wake-up cost %v: spin %v, want %v", tc.cost, got, tc.want)
		}
	}
	wakeCost.Store(0)
	for range 64 {
		noteWake(100 * time.Microsecond)
	}
	if c := time.Duration(wakeCost.Load()); c < 99*time.Microsecond || c > 100*time.Microsecond {
		t.Errorf("after 64 wake-ups of 100 us the estimate is %v", c)
	}
}

// BenchmarkRun times parallel loops of two shares of 50 us of work each,
// separated by gap of serial work on the caller (as the layers of a
// training step are), through the pool against a new goroutine and a
// WaitGroup per loop, in the same run:
// us/loop is the pool's time per loop and its gap, go-us/loop the
// goroutine's, x_go the ratio, wake-us the pool's estimate of a wake-up
// at the end (a worker spins for twice that: gaps longer than the spin
// find it parked and cost what the goroutine per loop costs). Where an idle core's wake-up is slow (a
// VM's halted virtual CPU) the goroutine's second share starts late.
func BenchmarkRun(b *testing.B) {
	busy := func(d time.Duration) {
		for start := time.Now(); time.Since(start) < d; {
		}
	}
	const work = 50 * time.Microsecond
	for _, gap := range []time.Duration{0, 20 * time.Microsecond, 200 * time.Microsecond} {
		b.Run(fmt.Sprintf("gap=%v", gap), func(b *testing.B) {
			const loops = 200
			pool := func() {
				for range loops {
					busy(gap)
					Run(2, func(int) { busy(work) })
				}
			}
			spawn := func() {
				for range loops {
					busy(gap)
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						busy(work)
					}()
					busy(work)
					wg.Wait()
				}
			}
			var tPool, tGo time.Duration
			for b.Loop() {
				start := time.Now()
				pool()
				tPool += time.Since(start)
				start = time.Now()
				spawn()
				tGo += time.Since(start)
			}
			b.ReportMetric(tPool.Seconds()*1e6/float64(b.N*loops), "us/loop")
			b.ReportMetric(tGo.Seconds()*1e6/float64(b.N*loops), "go-us/loop")
			b.ReportMetric(float64(tGo)/float64(tPool), "x_go")
			b.ReportMetric(float64(wakeCost.Load())/1e3, "wake-us")
		})
	}
}

// TestWorkerTakesClaimedTasksOnly checks the hand-over of a task to an
// idle worker (hand): a task stored without its claim (the caller
// descheduled between the two) is not taken, and the worker parks; the
// claim then wakes it with the task, and a spinning worker takes a
// handed task without a wake-up. No wake-up is left in the channel: one
// left there would block a later hand for ever.
func TestWorkerTakesClaimedTasksOnly(t *testing.T) {
	w := &worker{wake: make(chan struct{}, 1)}
	w.state.Store(workerSpinning)
	got := make(chan *task, 1)
	go func() { got <- w.await() }()
	tk := &task{i: 1}
	w.task.Store(tk) // hand's store, without its claim
	deadline := time.Now().Add(10 * time.Second)
	for w.state.Load() != workerParked {
		select {
		case <-got:
			t.Fatal("the worker took a task before dispatch claimed it")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not park in 10 s: state %d", w.state.Load())
		}
		time.Sleep(100 * time.Microsecond)
	}
	w.hand(tk)
	expectTaken(t, w, got, tk, "the parked worker")

	w.state.Store(workerSpinning)
	go func() { got <- w.await() }()
	tk2 := &task{i: 2}
	w.hand(tk2)
	expectTaken(t, w, got, tk2, "the spinning worker")
}

// expectTaken checks that the worker w (who) took the task handed to it,
// tk, within 10 s, and left no wake-up in its channel.
func expectTaken(t *testing.T, w *worker, got <-chan *task, tk *task, who string) {
	t.Helper()
	select {
	case g := <-got:
		if g != tk {
			t.Fatalf("%s took %p, want the task handed, %p", who, g, tk)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not take the task handed to it in 10 s", who)
	}
	if n := len(w.wake); n != 0 {
		t.Errorf("%d wake-ups left in the channel, want 0", n)
	}
}

// TestIdleWorkersPark runs many short parallel loops, then checks that
// every idle worker parks with no wake-up left in its channel. A dispatch
// that claimed a worker after handing it the task could leave it idle in
// the busy state: it then never parked again (a core spun away while
// idle), and the wake-up sent to it stayed in its channel, where the next
// one blocked dispatch, and the parallel loop, forever.
func TestIdleWorkersPark(t *testing.T) {
	for round := range 10 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 10000 {
				Run(2, func(int) {})
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: 10000 loops of two empty shares did not end within a minute", round)
		}
		// Every idle worker parks within maxSpin of its last task; allow
		// much longer for a loaded machine's scheduler.
		for deadline := time.Now().Add(10 * time.Second); ; {
			bad := ""
			idleMu.Lock()
			for i, w := range idle {
				if s, pending := w.state.Load(), len(w.wake); s != workerParked || pending != 0 {
					bad = fmt.Sprintf("idle worker %d: state %d (parked: %d), %d wake-up(s) pending", i, s, workerParked, pending)
					break
				}
			}
			idleMu.Unlock()
			if bad == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d, 10 s after the loops: %s", round, bad)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

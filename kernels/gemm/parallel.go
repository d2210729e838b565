package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// call is the shared state of one Sgemm call: the problem, the packed B
// blocks (double-buffered when several threads share them), one workspace
// per thread and the barrier they synchronise on. Calls are recycled through
// callPool so that steady-state calls allocate nothing.
type call struct {
	p       problem
	k       *kernel
	threads int
	splitM  bool // threads split the rows of C (else its columns)
	packB   [2][]float32
	ws      []*workspace
	bar     barrier
	wg      sync.WaitGroup
}

// workspace is one thread's private buffers: a packed block of A and a
// scratch tile for edges.
type workspace struct {
	packA, tile []float32
}

var callPool = sync.Pool{New: func() any { return new(call) }}

// getCall returns a call for p with kernel kn on up to threads threads, its
// buffers sized.
func getCall(kn *kernel, p *problem, threads int) *call {
	c := callPool.Get().(*call)
	c.p, c.k = *p, kn
	c.splitM, threads = split(kn, p, threads)
	c.threads = threads
	kc := min(kn.kc, p.k)
	nb := ceilDiv(min(kn.nc, p.n), kn.nr) * kn.nr * kc
	nbuf := 1
	if threads > 1 {
		nbuf = 2
	}
	for i := 0; i < nbuf; i++ {
		c.packB[i] = grow(c.packB[i], nb)
	}
	na := ceilDiv(min(kn.mc, p.m), kn.mr) * kn.mr * kc
	for len(c.ws) < threads {
		c.ws = append(c.ws, new(workspace))
	}
	for _, w := range c.ws[:threads] {
		w.packA = grow(w.packA, na)
		w.tile = grow(w.tile, kn.mr*kn.nr)
	}
	c.bar.reset(threads)
	return c
}

// putCall returns c to the pool, dropping its references to the caller's data.
func putCall(c *call) {
	c.p = problem{}
	callPool.Put(c)
}

// grow returns s resliced to n elements, reallocated if too small.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// split decides how threads divide p: by rows of C (splitM) or by columns of
// micro-panels, whichever leaves the busiest thread the fewest padded tile
// elements; it also caps threads at the number of micro-panels to share.
func split(kn *kernel, p *problem, threads int) (splitM bool, t int) {
	rp, cp := ceilDiv(p.m, kn.mr), ceilDiv(min(p.n, kn.nc), kn.nr)
	if threads <= 1 || max(rp, cp) < 2 {
		return true, 1
	}
	costM := ceilDiv(rp, min(threads, rp)) * cp
	costN := rp * ceilDiv(cp, min(threads, cp))
	if costM <= costN {
		return true, min(threads, rp)
	}
	return false, min(threads, cp)
}

// barrier is a reusable spinning barrier for the threads of one call. The
// threads of a call all run at once (see dispatch), so spinning is safe; it
// yields the processor while it waits.
type barrier struct {
	n     int32
	count atomic.Int32
	gen   atomic.Uint32
}

func (b *barrier) reset(n int) {
	b.n = int32(n)
	b.count.Store(0)
}

// wait blocks until all n threads have called it.
func (b *barrier) wait() {
	if b.n <= 1 {
		return
	}
	g := b.gen.Load()
	if b.count.Add(1) == b.n {
		b.count.Store(0)
		b.gen.Add(1)
		return
	}
	for i := 0; b.gen.Load() == g; i++ {
		if i > 64 {
			runtime.Gosched()
		}
	}
}

// share is one thread's part of a call.
type share struct {
	c *call
	t int
}

// Worker goroutines are reused across calls. A share is handed to a worker
// only if one is idle; otherwise a new worker starts. Every share therefore
// runs at once, which the spinning barrier relies on, and steady-state calls
// start no goroutine. This pool is the package's only mutable global state.
var (
	workers     = make(chan share)
	idleWorkers atomic.Int32
)

// dispatch runs s on an idle worker, or on a new one.
func dispatch(s share) {
	for {
		n := idleWorkers.Load()
		if n <= 0 {
			go worker(s)
			return
		}
		if idleWorkers.CompareAndSwap(n, n-1) {
			workers <- s
			return
		}
	}
}

// worker runs s, then waits for further shares forever.
func worker(s share) {
	for {
		s.c.run(s.t)
		idleWorkers.Add(1)
		s.c.wg.Done()
		s = <-workers
	}
}

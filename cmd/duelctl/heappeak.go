package main

import (
	"bytes"
	"io"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
)

// heapPeak keeps the Go heap profile of the largest live heap seen at the
// end of a garbage collection, for DUEL_HEAP_PROFILE: what a command held
// when it held the most (a run's activations, a kNN measurement's buffers)
// is gone by the time it ends. The runtime's heap profile counts an
// allocation only once a collection or two have passed since it, so the
// profile is taken again at the next two collections after a new peak
// while the live heap stays near it.
type heapPeak struct {
	debug int // pprof's debug level: 0 the gzipped protocol buffer, 1 text

	mu      sync.Mutex
	stopped bool
	peak    uint64       // live bytes at the peak
	retake  int          // collections at which to take the profile again
	prof    bytes.Buffer // the profile taken at the peak
	err     error
}

// retakes is how many collections after a new peak its profile is taken
// again, and nearPeak how close to the peak the live heap must still be
// (a fraction of it).
const (
	retakes  = 2
	nearPeak = 0.95
)

// gcSentinel is an object whose finalizer runs after a collection. It
// holds a pointer, so that the allocator does not pack it with other
// small objects (whose finalizers may never run).
type gcSentinel struct{ p *heapPeak }

// watchHeapPeak starts keeping the profile at the peak, in pprof's format
// of the given debug level.
func watchHeapPeak(debug int) *heapPeak {
	p := &heapPeak{debug: debug}
	p.arm()
	return p
}

// arm has the next collection call note, which arms the one after it.
func (p *heapPeak) arm() {
	runtime.SetFinalizer(&gcSentinel{p}, func(*gcSentinel) {
		if p.note() {
			p.arm()
		}
	})
}

// note takes the profile when the live heap is the largest yet and
// reports whether the watch goes on.
func (p *heapPeak) note() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return true
	}
	live := sample[0].Value.Uint64()
	switch {
	case live > p.peak || p.prof.Len() == 0:
		p.peak, p.retake = live, retakes
	case p.retake > 0 && float64(live) >= nearPeak*float64(p.peak):
		p.retake--
	default:
		p.retake = 0
		return true
	}
	p.prof.Reset()
	p.err = pprof.Lookup("heap").WriteTo(&p.prof, p.debug)
	return true
}

// stop ends the watch (after a last collection, so that a command that
// never collected has a profile too) and writes the profile of the peak to
// w.
func (p *heapPeak) stop(w io.Writer) error {
	runtime.GC()
	p.note()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.err != nil {
		return p.err
	}
	_, err := w.Write(p.prof.Bytes())
	return err
}

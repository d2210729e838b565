package rows

import (
	"runtime"

	"github.com/duel-ssl/duel/internal/par"
)

// laneKernel computes one lane: out from a and b (b may be nil), all
// contiguous slices of the lane's n elements. lane numbers the lanes.
type laneKernel func(lane int, out, a, b []float32)

// parallelWork is the number of elements above which lanes are split
// across goroutines.
const parallelWork = 1 << 15

// forLanes runs k over every 1-d lane along axis of contiguous tensors of
// shape whose elements are out, a and b (b may be nil). Lanes along the
// last axis are passed in place; others are gathered into scratch buffers
// and out (and b when bOut is set: a second output) is scattered back.
// Large inputs are split across GOMAXPROCS goroutines by lane.
func forLanes(shape []int, axis int, k laneKernel, out, a, b []float32, bOut bool) {
	outer, n, inner := SplitAxis(shape, axis)
	count := outer * inner
	if count == 0 || n == 0 {
		return
	}
	run := func(lo, hi int) {
		if inner == 1 {
			for l := lo; l < hi; l++ {
				s := l * n
				var bl []float32
				if b != nil {
					bl = b[s : s+n]
				}
				k(l, out[s:s+n], a[s:s+n], bl)
			}
			return
		}
		buf := make([]float32, 3*n)
		ob, ab, bb := buf[:n], buf[n:2*n], buf[2*n:]
		if b == nil {
			bb = nil
		}
		for l := lo; l < hi; l++ {
			base := (l/inner)*n*inner + l%inner
			for i := range n {
				ab[i] = a[base+i*inner]
			}
			if b != nil && !bOut {
				for i := range n {
					bb[i] = b[base+i*inner]
				}
			}
			k(l, ob, ab, bb)
			for i, v := range ob {
				out[base+i*inner] = v
			}
			if bOut {
				for i, v := range bb {
					b[base+i*inner] = v
				}
			}
		}
	}
	ParallelFor(count, count*n, run)
}

// ParallelFor calls run on consecutive ranges covering [0, count), split
// across GOMAXPROCS goroutines when work (elements touched) is large.
func ParallelFor(count, work int, run func(lo, hi int)) {
	w := runtime.GOMAXPROCS(0)
	if work < parallelWork {
		w = 1
	}
	par.For(count, w, run)
}

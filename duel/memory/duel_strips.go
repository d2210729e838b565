package memory

import (
	"sync/atomic"

	"github.com/duel-ssl/duel/kernels/igemm"
)

// stripRows is the number of batch rows in one strip of the product.
const stripRows = 16

// pipeMaxCols bounds K*B for the strips: the batch's columns are transposed
// between strips, later than without them, and until they are the passes
// read them one strided value at a time. At (8192, 512, 128) the strips
// made the update up to ~20% slower (14-17 vs 14-15.6 ms,
// BenchmarkDUELUpdate, alternating runs), where (2048, 256, 256) and (4096,
// 256, 128) gained 0.2-0.5 ms.
const pipeMaxCols = 1 << 20

// strips shares out the strips of rows of the product of an update between
// the goroutine of the score passes and the one that transposes columns:
// both claim strips in order; the passes claim one whenever the rows they
// need are not ready yet and strips are left, and wait otherwise.
type strips struct {
	f     *fastDUEL
	w, b  int
	n     int           // strips
	next  atomic.Int64  // next strip to claim
	done  []atomic.Bool // done[s]: strip s is computed
	ready int           // strips 0..ready-1 are done (passes' goroutine only)
}

// newStrips returns the strips of the product of f's batch rows (b of them,
// rows of w dots).
func (f *fastDUEL) newStrips(b, w int) *strips {
	n := (b + stripRows - 1) / stripRows
	return &strips{f: f, w: w, b: b, n: n, done: make([]atomic.Bool, n)}
}

// claim computes the next unclaimed strip and reports whether there was one.
func (st *strips) claim() bool {
	s := int(st.next.Add(1)) - 1
	if s >= st.n {
		return false
	}
	f, w, z := st.f, st.w, st.f.z
	r0, r1 := s*stripRows, min(st.b, (s+1)*stripRows)
	igemm.MulConcatSerial(f.dots[r0*w:], w, f.batch.rows[r0*z:r1*z], z, r1-r0, &f.slots.packed, &f.batch.packed)
	st.done[s].Store(true)
	f.sig.notify()
	return true
}

// waitRows returns when the first rows rows of the product are computed,
// computing later strips meanwhile if any are left.
func (st *strips) waitRows(rows int) {
	for st.ready*stripRows < rows {
		if st.done[st.ready].Load() {
			st.ready++
			continue
		}
		if !st.claim() {
			s := st.ready // the other goroutine computes it
			st.f.sig.wait(func() bool { return st.done[s].Load() })
		}
	}
}

// waitAll returns when every strip is computed (without claiming any).
func (st *strips) waitAll() {
	for s := range st.done {
		st.f.sig.wait(func() bool { return st.done[s].Load() })
	}
}

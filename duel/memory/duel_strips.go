package memory

import (
	"sync/atomic"

	"github.com/duel-ssl/duel/kernels/igemm"
)

// stripRows is the number of batch rows in one strip of the product.
const stripRows = 16

// strips shares out the strips of rows of the product of an update between
// the goroutine of the score passes and the one that keeps the block (see
// carried.follow): both claim strips in order; the passes claim one
// whenever the rows they need are not ready yet and strips are left, and
// wait otherwise. A strip's slot columns are transposed into the ring as
// it is computed, so the passes find an evicted slot's dots with the
// earlier batch rows there as soon as their rows are ready.
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
// Panel by panel, while a panel's columns of the strip are in cache, it
// also writes the slots' columns transposed into the current part of the
// ring (see carried), which the passes and later updates read.
func (st *strips) claim() bool {
	s := int(st.next.Add(1)) - 1
	if s >= st.n {
		return false
	}
	f, w, z, k, cr := st.f, st.w, st.f.z, st.f.k, st.f.carried
	r0, r1 := s*stripRows, min(st.b, (s+1)*stripRows)
	a := f.batch.rows[r0*z : r1*z]
	for p := range f.slots.packed.Panels() {
		igemm.MulPanels(f.dots[r0*w:], w, a, z, r1-r0, &f.slots.packed, p, p+1)
		j0 := p * igemm.NR
		transposeBand(cr.cur[j0*cr.rowLen:], f.dots[j0:], min(k-j0, igemm.NR), cr.rowLen, w, r0, r1)
	}
	igemm.MulPanels(f.dots[r0*w+k:], w, a, z, r1-r0, &f.batch.packed, 0, f.batch.packed.Panels())
	st.done[s].Store(true)
	f.sig.notify()
	return true
}

// waitRows returns when the first rows rows of the product (and their
// transposed columns) are computed, computing later strips meanwhile if any
// are left, and records the rows done in the block's colsDone.
func (st *strips) waitRows(rows int) {
	if st.ready*stripRows >= rows {
		return
	}
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
	st.f.carried.colsDone.Store(int64(min(st.b, st.ready*stripRows)))
}

// waitAll returns when every strip is computed (without claiming any).
func (st *strips) waitAll() {
	for s := range st.done {
		st.f.sig.wait(func() bool { return st.done[s].Load() })
	}
}

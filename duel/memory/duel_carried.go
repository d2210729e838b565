package memory

import (
	"math"
	"runtime"
	"sync/atomic"
)

// carried holds the grid dots between every pair of slots (the K x K
// block of the fast path), kept up to date lazily.
//
// When a new row takes a slot, its own row of dots is written at once (a
// contiguous run: its dots with every slot, from the update's product),
// but its column, one value in every other row, is not: writing B columns
// would touch every cache line of the block at every update. The update's
// product holds these columns too, transposed (K x B, one contiguous run
// of B values per slot), and they are kept in a ring of up to foldEvery
// updates. Rows are stamped in the order they arrive (stamp), and the dot
// of the rows in slots r and c is
//
//	ring[r*stride + idx[c]]   when c's occupant arrived after r's
//	block[r*K + c]            otherwise
//
// The new rows of one update are ordered too: a new row's run in its
// update's part of the ring holds its dots with the batch (so with the new
// rows after it), and its block row its dots with the new rows before it.
// No update writes into another row than those of its new rows.
//
// which blendRow reads for a whole row at once (AVX-512 masked gathers).
// When the ring is full, fold writes it into the block, every row once.
type carried struct {
	k      int
	block  []int32 // K x K
	ring   []int32 // parts x K x stride: the columns of the updates of the window
	stride int     // B of the ring's layout (the largest batch since it was made)
	parts  int     // updates the ring can hold
	tick   int     // updates in the ring
	stamp  []int32 // K: arrival of the slot's occupant in the window: tick*stride + bp + 1; 0: before
	idx    []int32 // K: where the slot's column is in a row's part of the ring

	cur      []int32      // the part of the current update
	colsDone atomic.Int64 // batch rows of cur written so far
	occ      []int32      // scratch of follow: batch row placed last in each slot
}

// foldEvery is how many updates' columns the ring holds before they are
// folded into the block. A fold reads and writes the whole block (memory
// bound: about 2 ms at K = 2048 on the project machine), so it pays to fold
// rarely; an evicted row's dots then gather the columns of up to
// foldEvery-1 updates. 8 cut the mean update at (2048, 256, 256) by about a
// quarter against 4; 16 was no better than 8 (BenchmarkDUELCarry,
// alternating runs).
const foldEvery = 8

// newCarried returns the block for k slots, all zero, with a ring laid out
// for batches of b rows.
func newCarried(k, b int) *carried {
	cr := &carried{k: k, block: make([]int32, k*k), stamp: make([]int32, k), idx: make([]int32, k)}
	cr.layRing(b)
	return cr
}

// layRing allocates the ring for batches of up to b rows (the ring must be
// empty); it reports false when such a ring cannot be indexed with int32.
func (cr *carried) layRing(b int) bool {
	part := int64(cr.k) * int64(max(b, 1))
	cr.parts = int(min(int64(foldEvery), math.MaxInt32/part))
	if cr.parts < 1 {
		return false
	}
	cr.stride = max(b, 1)
	cr.ring = make([]int32, int64(cr.parts)*part)
	// Touch the pages now rather than during the first updates.
	for i := 0; i < len(cr.ring); i += 1024 {
		cr.ring[i] = 0
	}
	return true
}

// begin prepares an update of b batch rows. It reports false when the
// ring cannot hold such a batch (K*B beyond int32 indices): the caller
// then drops the block.
func (cr *carried) begin(b int) bool {
	if b > cr.stride {
		if cr.tick > 0 {
			cr.fold()
		}
		if !cr.layRing(b) {
			return false
		}
	}
	part := cr.k * cr.stride
	cr.cur = cr.ring[cr.tick*part : (cr.tick+1)*part]
	cr.colsDone.Store(0)
	return true
}

// row returns the dots of slot J's occupant with every slot, in dst when
// the block's row needs the ring's columns, else the block's row itself.
func (cr *carried) row(dst []int32, J int) []int32 {
	k := cr.k
	r := cr.block[J*k : (J+1)*k]
	if cr.tick == 0 {
		return r
	}
	blendRow(dst, r, cr.ring, J*cr.stride, cr.idx, cr.stamp, cr.stamp[J])
	return dst
}

// prefetchRow asks for the cache lines that row(dst, J) will read, all at
// once: the block's row and J's runs in the ring (a random slot: they are
// cold).
func (cr *carried) prefetchRow(J int) {
	k := cr.k
	prefetch(cr.block[J*k : (J+1)*k])
	part := k * cr.stride
	for t := 0; t < cr.tick; t++ {
		prefetch(cr.ring[t*part+J*cr.stride : t*part+(J+1)*cr.stride])
	}
}

// columnsOf returns the dots of slot J's occupant with the first i batch
// rows, from the current update's columns, or nil when they are not
// written yet.
func (cr *carried) columnsOf(J, i int) []int32 {
	if cr.colsDone.Load() < int64(i) {
		return nil
	}
	return cr.cur[J*cr.stride : J*cr.stride+i]
}

// follow runs beside the score passes of an update of b batch rows: it
// helps with the product's strips (st; nil when the product is already
// done), transposes the slots' columns into the ring as the strips are
// done, then, as the passes place the batch rows (f.placed, f.slotOf),
// writes each new row's grid row, its row of the block (the product's
// dots with the slots are with the occupants before the update: its dots
// with the new rows before it replace those) and its run in the ring (its
// dots with the batch).
func (cr *carried) follow(f *fastDUEL, st *strips, b int) {
	k, w := cr.k, cr.k+b
	if st == nil {
		cr.transpose(f.dots, w, 0, b)
	} else {
		t := 0 // rows transposed
		for {
			more := st.claim()
			for s := t / stripRows; s < st.n && st.done[s].Load(); s++ {
				end := min(b, (s+1)*stripRows)
				cr.transpose(f.dots, w, t, end)
				t = end
			}
			if !more {
				break
			}
		}
		st.waitAll()
		cr.transpose(f.dots, w, t, b)
	}

	// From here on the product is done: the slots' grid rows may change.
	cr.occ = grow(cr.occ, k)
	for j := 0; j < b; j++ {
		for f.placed.Load() <= int64(j) {
			runtime.Gosched() // the passes run: wait for the next row
		}
		s := f.slotOf[j]
		cr.occ[s] = int32(j)
		f.slots.setRow(s, f.batch.row(j))
		row := cr.block[s*k : (s+1)*k]
		src := f.dots[j*w : (j+1)*w]
		copy(row, src[:k])
		row[s] = src[k+j]
		for l := 0; l < j; l++ {
			if sl := f.slotOf[l]; int(cr.occ[sl]) == l { // not evicted since
				row[sl] = src[k+l]
			}
		}
		copy(cr.cur[s*cr.stride:s*cr.stride+b], src[k:])
	}
}

// transpose writes the current part of the ring for batch rows bp0..bp1-1:
// cur[c*stride + bp] = dots[bp*w + c] for every slot c, sixteen rows at a
// time, and records the rows done in colsDone.
func (cr *carried) transpose(dots []int32, w, bp0, bp1 int) {
	for bp := bp0; bp < bp1; {
		end := min(bp1, bp+16)
		transposeBand(cr.cur, dots, cr.k, cr.stride, w, bp, end)
		cr.colsDone.Store(int64(end))
		bp = end
	}
}

// arrived records that batch row bp of the current update took slot s.
func (cr *carried) arrived(s, bp int) {
	cr.stamp[s] = int32(cr.tick*cr.stride + bp + 1)
	cr.idx[s] = int32(cr.tick*cr.k*cr.stride + bp)
}

// end closes the current update: its part of the ring is in use, and a
// full ring is folded.
func (cr *carried) end() {
	cr.cur = nil
	cr.tick++
	if cr.tick == cr.parts {
		cr.fold()
	}
}

// fold writes the ring's columns into every row of the block and empties
// the ring.
func (cr *carried) fold() {
	k := cr.k
	parallelRows(k, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			if r+1 < r1 {
				cr.prefetchRow(r + 1)
			}
			row := cr.block[r*k : (r+1)*k]
			blendRow(row, row, cr.ring, r*cr.stride, cr.idx, cr.stamp, cr.stamp[r])
		}
	})
	clear(cr.stamp)
	cr.tick = 0
}

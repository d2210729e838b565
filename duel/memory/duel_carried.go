package memory

import (
	"math"
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
// of B values per slot), and the last few updates' are kept in a ring,
// which holds, for each slot, the runs of these updates one after the
// other (so that a row's runs are one contiguous stretch of memory).
// Rows are stamped in the order they arrive (stamp), each row of the block
// is complete for the rows stamped up to sync, and the dot of the rows in
// slots r and c is
//
//	ring[r*rowLen + idx[c]]   when stamp[c] > sync[r]
//	block[r*K + c]            otherwise
//
// which blendRow reads for a whole row at once (AVX-512 masked gathers).
// The new rows of one update are ordered too: a new row's run in its
// update's part of the ring holds its dots with the batch (so with the new
// rows after it), and its block row its dots with the new rows before it.
// No update writes into another row than those of its new rows.
//
// Before an update reuses the ring's oldest part, the rows that still need
// it are folded: completed from the ring and written back, their sync
// moved to the present. Only rows that outlive the ring's window are ever
// folded: most rows of a DUEL memory are evicted before (at (2048, 256,
// 256) on random rows, about a third of the memory is older than eight
// updates).
type carried struct {
	k      int
	block  []int32 // K x K
	ring   []int32 // K x parts x stride: the columns of the last updates
	stride int     // B of the ring's layout (the largest batch since it was made)
	parts  int     // updates the ring holds
	rowLen int     // parts*stride: a slot's stretch of the ring
	u      int     // updates since the stamps started: the current one
	uLimit int     // u that starts the stamps again (they fit int32 below it)
	stamp  []int32 // K: arrival of the slot's occupant: u*stride + bp + 1; 0: before the ring
	sync   []int32 // K: the slot's block row is complete for the stamps up to sync
	idx    []int32 // K: where the slot's column is in a row's stretch of the ring

	cur       []int32      // the ring from the current update's first run on (rows rowLen apart)
	_         [64]byte     // the counters below on cache lines of their own
	colsDone  atomic.Int64 // batch rows of cur written so far
	_         [56]byte
	next      atomic.Int64 // batch rows claimed for writeRow
	_         [56]byte
	anyOrder  bool         // see writeRow
	occ       []int32      // placeRow's: batch row placed last in each slot
	folding   []int        // rows folded during the current update (see finish)
	foldNext  atomic.Int64 // rows of folding claimed
	foldReady atomic.Bool  // folding is listed
}

// ringParts is how many updates' columns the ring holds at most (and at
// most twice the block's size): an evicted row's dots gather the columns of
// up to ringParts-1 updates, and a row is folded once every ringParts
// updates of its life after the first ringParts. At (2048, 256, 256) 16
// parts fold about half as many rows per update as 8 and make the update
// faster (BenchmarkDUELUpdate); 32 are no better than 16.
const ringParts = 16

// newCarried returns the block for k slots, all zero, with a ring laid out
// for batches of b rows.
func newCarried(k, b int) *carried {
	cr := &carried{k: k, block: make([]int32, k*k), stamp: make([]int32, k),
		sync: make([]int32, k), idx: make([]int32, k)}
	cr.layRing(b)
	return cr
}

// layRing allocates the ring for batches of up to b rows (the ring must be
// unused: every row folded): ringParts updates, at most twice the block.
func (cr *carried) layRing(b int) {
	cr.stride = max(b, 1)
	cr.parts = min(ringParts, max(2, 2*cr.k/cr.stride))
	cr.rowLen = cr.parts * cr.stride
	cr.uLimit = math.MaxInt32/cr.stride - 2
	cr.ring = make([]int32, cr.k*cr.rowLen)
	// Touch the pages now rather than during the first updates.
	for i := 0; i < len(cr.ring); i += 1024 {
		cr.ring[i] = 0
	}
}

// begin prepares an update of b batch rows (anyOrder: no new row can be
// evicted by a later one, see writeRow).
func (cr *carried) begin(b int, anyOrder bool) {
	if b > cr.stride || cr.u >= cr.uLimit {
		cr.foldAll()
		if b > cr.stride {
			cr.layRing(b)
		}
	}
	cr.cur = cr.ring[(cr.u%cr.parts)*cr.stride:]
	cr.colsDone.Store(0)
	cr.next.Store(0)
	cr.foldReady.Store(false)
	cr.anyOrder = anyOrder
	cr.occ = grow(cr.occ, cr.k)
}

// row returns the dots of slot J's occupant with every slot, in dst when
// the block's row needs the ring's columns, else the block's row itself.
func (cr *carried) row(dst []int32, J int) []int32 {
	k := cr.k
	r := cr.block[J*k : (J+1)*k]
	if int(cr.sync[J]) >= cr.u*cr.stride {
		return r // complete: no row arrived since
	}
	blendRow(dst, r, cr.ring, J*cr.rowLen, cr.idx, cr.stamp, cr.sync[J])
	return dst
}

// prefetchRow asks for the cache lines that row(dst, J) will read, all at
// once: the block's row and J's runs in the ring parts it needs (a random
// slot: they are cold).
func (cr *carried) prefetchRow(J int) {
	k := cr.k
	prefetch(cr.block[J*k : (J+1)*k])
	run := cr.ring[J*cr.rowLen : (J+1)*cr.rowLen]
	for v := max(int(cr.sync[J])/cr.stride, cr.u-cr.parts+1, 0); v < cr.u; v++ {
		p := v % cr.parts
		prefetch(run[p*cr.stride : (p+1)*cr.stride])
	}
}

// prefetchCur asks for the cache lines of slot J's dots with the first i
// batch rows in the current part of the ring (see columnsOf).
func (cr *carried) prefetchCur(J, i int) {
	prefetch(cr.cur[J*cr.rowLen : J*cr.rowLen+i])
}

// columnsOf returns the dots of slot J's occupant with the first i batch
// rows, from the current update's columns, or nil when they are not
// written yet.
func (cr *carried) columnsOf(J, i int) []int32 {
	if cr.colsDone.Load() < int64(i) {
		return nil
	}
	return cr.cur[J*cr.rowLen : J*cr.rowLen+i]
}

// follow runs beside the score passes of an update of b batch rows: it
// computes strips of the product (st; nil when the product is already
// done, whose columns it then transposes into the ring), then writes the
// new rows' grid rows and ring runs as the passes place them (f.placed,
// f.slotOf; see writeRow), and folds rows (see finish).
func (cr *carried) follow(f *fastDUEL, st *strips, b int) {
	if st == nil {
		cr.transpose(f.dots, cr.k+b, 0, b)
	} else {
		for st.claim() {
		}
		st.waitAll()
	}
	f.sig.notify() // every column is transposed (see finish)

	// From here on the product is done: the slots' grid rows may change.
	for {
		j := cr.next.Load()
		if j >= int64(b) {
			break
		}
		if j >= f.placed.Load() {
			f.sig.wait(func() bool { return f.placed.Load() > j }) // the passes run
			continue
		}
		if cr.next.CompareAndSwap(j, j+1) {
			cr.writeRow(f, int(j), b)
		}
	}
	f.sig.wait(cr.foldReady.Load)
	cr.foldRows()
}

// finish is the passes' side of follow once every batch row is placed:
// it lists the rows to fold, then shares out with follow the new rows
// left to write (when their order does not matter) and the rows to fold.
//
// A row is folded when the next update will reuse a part of the ring it
// needs, unless it was evicted. Folding it now, beside the last new rows
// being written, rather than after the update, takes it off the serial
// end of the update; it only reads parts of earlier updates (the rows of
// this one have no stamp yet).
func (cr *carried) finish(f *fastDUEL, b int) {
	cr.folding = cr.folding[:0]
	if reused := cr.u + 1 - cr.parts; reused >= 0 {
		limit := int32((reused + 1) * cr.stride) // rows complete up to here do not need it
		for r, s := range cr.sync {
			if s < limit && f.selected[r] {
				cr.folding = append(cr.folding, r)
			}
		}
	}
	cr.foldNext.Store(0)
	cr.foldReady.Store(true)
	f.sig.notify()
	if cr.anyOrder {
		// The runs written would be transposed over.
		f.sig.wait(func() bool { return cr.colsDone.Load() >= int64(b) })
		for {
			j := cr.next.Add(1) - 1
			if j >= int64(b) {
				break
			}
			cr.writeRow(f, int(j), b)
		}
	}
	cr.foldRows()
}

// placeRow writes the block row of batch row j as the passes place it in
// its slot s (f.slotOf): the product's dots of j with the slots (with
// their occupants before the update), with itself, and with the new rows
// placed before it that are still held, which replaced those occupants.
// The passes call it right after their pass of j, while j's row of the
// product and the block row of the slot's last occupant (its victim, whose
// dots the pass read) are in their cache; no one else reads or writes
// that block row during the update.
func (cr *carried) placeRow(f *fastDUEL, j, b int) {
	k, w := cr.k, cr.k+b
	s := f.slotOf[j]
	cr.occ[s] = int32(j)
	row := cr.block[s*k : (s+1)*k]
	src := f.dots[j*w : (j+1)*w]
	copy(row, src[:k])
	row[s] = src[k+j]
	for l, sl := range f.slotOf[:j] {
		if int(cr.occ[sl]) == l { // not evicted since
			row[sl] = src[k+l]
		}
	}
}

// writeRow writes the rest of what batch row j brings to its slot s, once
// the product is done: its grid row and its run in the ring (its dots with
// the batch). With anyOrder, every new row stays (protected admission,
// B <= K) and rows may be written in any order, by either goroutine;
// otherwise they are written in order by follow, so that the last new row
// in a slot writes last.
func (cr *carried) writeRow(f *fastDUEL, j, b int) {
	w := cr.k + b
	s := f.slotOf[j]
	f.slots.setRow(s, f.batch.row(j))
	copy(cr.cur[s*cr.rowLen:s*cr.rowLen+b], f.dots[j*w+cr.k:(j+1)*w])
}

// foldRows folds the rows listed by finish, claimed a few at a time.
func (cr *carried) foldRows() {
	const claim = 4
	n := int64(len(cr.folding))
	for {
		i0 := cr.foldNext.Add(claim) - claim
		if i0 >= n {
			return
		}
		cr.foldRange(cr.folding[i0:min(i0+claim, n)])
	}
}

// transpose writes the current part of the ring for batch rows bp0..bp1-1:
// cur[c*stride + bp] = dots[bp*w + c] for every slot c, sixteen rows at a
// time, and records the rows done in colsDone.
func (cr *carried) transpose(dots []int32, w, bp0, bp1 int) {
	for bp := bp0; bp < bp1; {
		end := min(bp1, bp+16)
		transposeBand(cr.cur, dots, cr.k, cr.rowLen, w, bp, end)
		cr.colsDone.Store(int64(end))
		bp = end
	}
}

// arrived records that batch row bp of the current update took slot s.
func (cr *carried) arrived(s, bp int) {
	st := int32(cr.u*cr.stride + bp + 1)
	cr.stamp[s], cr.sync[s] = st, st
	cr.idx[s] = int32((cr.u%cr.parts)*cr.stride + bp)
}

// end closes the current update: the rows folded during it are complete
// up to it.
func (cr *carried) end() {
	cr.cur = nil
	now := int32(cr.u * cr.stride)
	for _, r := range cr.folding {
		cr.sync[r] = now
	}
	cr.u++
}

// fold completes the given rows of the block from the ring, on all cores;
// their sync becomes the present.
func (cr *carried) fold(rows []int) {
	parallelRows(len(rows), func(i0, i1 int) { cr.foldRange(rows[i0:i1]) })
	now := int32(cr.u * cr.stride)
	for _, r := range rows {
		cr.sync[r] = now
	}
}

// foldRange completes the given rows of the block from the ring (sync is
// left to the caller).
func (cr *carried) foldRange(rows []int) {
	k := cr.k
	for i, r := range rows {
		if i+1 < len(rows) {
			cr.prefetchRow(rows[i+1])
		}
		row := cr.block[r*k : (r+1)*k]
		blendRow(row, row, cr.ring, r*cr.rowLen, cr.idx, cr.stamp, cr.sync[r])
	}
}

// foldAll completes every row of the block and starts the stamps again
// from zero: the ring is then unused.
func (cr *carried) foldAll() {
	cr.folding = cr.folding[:0]
	for r, s := range cr.sync {
		if int(s) < cr.u*cr.stride {
			cr.folding = append(cr.folding, r)
		}
	}
	cr.fold(cr.folding)
	clear(cr.stamp)
	clear(cr.sync)
	cr.u = 0
}

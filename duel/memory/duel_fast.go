package memory

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/kernels/igemm"
)

// fastDUEL computes the DUEL policy as duelReference does, without
// recomputing what carries over from one update to the next.
//
// The reference rebuilds, at every update, the q of every pair of rows held
// (K x K) and their sums, the initial scores. Both are known from the
// previous update: at its end, the score of every survivor is exactly the
// sum of its q with the survivors (scores are exact, see similarity.go). So
// the fast path keeps, between updates:
//
//	grid    the grid rows of the memory, one per slot
//	score   the score of the row in each slot, as an exact integer (S,
//	        see scorepass.go)
//	carried the K x K grid dot products between slots, kept up to date
//	        lazily (see carried); or, beyond MaxBlockBytes, nothing: each
//	        evicted row's dots are recomputed
//
// and an update costs one B x (K+B) x Z product of int16 grid rows (the
// new rows against the memory and the batch, kernels/igemm: exact int32
// dots, see gridSet), B fused passes over the K+B scores (scorePass: one
// pass over integer keys that carry the tie-breaking rank, AVX-512 or
// AVX2), and the bookkeeping of the block, O(K B) memory traffic: each new
// row's block row is written by the passes as they place it (its data are
// then in their cache, see carried.placeRow), the rest on another
// goroutine while the passes run (see carried.follow). With igemm's kernel the product is computed in strips of
// batch rows by both goroutines, and the passes start with the first strip
// (see strips). Once the evictions are known, update returns them and the
// rest (the block's last rows, folds, order and rank) runs in the
// background beside the caller's own work (the memory moving its rows);
// the next update waits for it (settle).
//
// Rows live in slots that never move; the memory order is kept apart (order,
// rank), so that a survivor's carried data stays where it is. A new row
// takes the slot of the row it evicts. Ties are broken on rank, as the
// reference breaks them on position.
type fastDUEL struct {
	last  Lineage // the state describes the rows after this arrival's evictions
	ready bool
	k, z  int

	slots    gridSet      // K grid rows, one per slot
	batch    *gridSet     // B grid rows of the batch: one of grids
	grids    [2]gridSet   // the batch's and the last batch's (see update)
	flip     int          // batch is &grids[flip]
	score    []int64      // K: the slots' scores S between updates (see scorepass.go)
	key      []int64      // K+B: during an update, the slots' keys, then the batch rows'
	shift    uint         // the keys' rank bits (see keyShift)
	packed   bool         // the keys hold ranks (else ties are found by a scan)
	wide     bool         // keys without ranks whatever the size (tests)
	selected []bool       // K+B: held now
	order    []int        // order[p]: slot at position p of the memory
	rank     []int        // rank[s]: position of slot s
	carried  *carried     // the K x K dots between slots; nil beyond the limit
	rowJ     []int32      // K: dots of one evicted slot
	dots     []int32      // B x (K+B): dots of each batch row with slots and batch
	held     int          // rows held during the current update
	colJ     []int32      // dots of one slot with the batch rows (no transposed copy)
	slotOf   []int        // slotOf[i]: the slot batch row i takes (its victim's)
	_        [64]byte     // placed alone on its cache line: follow polls it
	placed   atomic.Int64 // batch rows whose slot is decided
	_        [56]byte
	sig      *signal        // the update's goroutines wait for each other on it
	tail     sync.WaitGroup // the background end of the last update
}

// update runs the policy on a and returns the evicted positions. It leaves
// the state describing the memory as the owner will hold it after applying
// them; if the owner does something else, the next arrival does not follow
// a's lineage and the update rebuilds.
func (f *fastDUEL) update(a *Arrival, adm Admission, maxBlock int64) []int {
	// The batch's grid rows depend on the batch alone: they are computed
	// into the grid set the last update does not use, while its end may
	// still run in the background.
	next := 1 - f.flip
	f.grids[next].fromUnit(a.Batch, a.B(), a.Z)
	f.settle()
	if !f.ready || !a.Lineage().Follows(f.last) || f.k != a.K() || f.z != a.Z {
		f.rebuild(a, maxBlock)
	}
	f.flip = next
	f.batch = &f.grids[next]
	if f.sig == nil {
		f.sig = newSignal()
	}
	k, b := f.k, a.B()
	w := k + b // length of a row of dots
	f.dots = grow(f.dots, b*w)
	// Columns 0..K-1: the slots; K..K+B-1: the batch. With igemm's
	// kernel, two cores and a block, the product is computed in strips of
	// rows, and the score passes start as soon as their rows are there
	// (see strips).
	cr := f.carried
	if cr != nil {
		cr.begin(b, adm == Protected && b <= k)
	}
	pipe := igemm.Accelerated() && cr != nil && runtime.GOMAXPROCS(0) >= 2 && b >= 2*stripRows
	var st *strips
	if pipe {
		st = f.newStrips(b, w)
	} else {
		dotsConcat(f.dots, w, f.batch.rows, b, &f.slots, f.batch)
	}

	f.setKeys(b)
	f.selected = grow(f.selected, w)
	for c := range f.selected {
		f.selected[c] = c < k
	}
	f.slotOf = grow(f.slotOf, b)
	f.placed.Store(0)

	// While the score passes run, which are sequential, another goroutine
	// transposes the slots' dots with the batch and writes the rows of the
	// new rows into the block as their places are decided (see follow).
	var wg sync.WaitGroup
	if cr != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cr.follow(f, st, b)
		}()
	}

	evicted := make([]int, b)
	f.held = k
	J := f.bestSlot()
	for i := 0; i < b; i++ {
		if st != nil {
			st.waitRows(i + 1)
		}
		if J < k {
			evicted[i] = f.rank[J]
			f.slotOf[i] = J
		} else {
			evicted[i] = J
			f.slotOf[i] = f.slotOf[J-k]
		}
		J = f.replace(J, i, b, adm == Protected)
		f.placed.Store(int64(i + 1))
		f.sig.notify()
	}
	// The evictions are known: the rest of the update (the block's rows
	// and folds, order and rank) runs in the background, beside what the
	// caller does with them (the memory moves its rows), until the next
	// update or rebuild (settle).
	f.last = a.Lineage()
	f.tail.Add(1)
	go func() {
		defer f.tail.Done()
		if cr != nil {
			cr.finish(f, b)
		}
		wg.Wait()
		f.commit(b)
	}()
	return evicted
}

// settle returns when the last update's background work is done.
func (f *fastDUEL) settle() { f.tail.Wait() }

// setKeys sizes the keys for an update of b batch rows and sets the
// slots': score and reversed rank (see keyShift).
func (f *fastDUEL) setKeys(b int) {
	k := f.k
	f.shift, f.packed = keyShift(k, b)
	if f.wide {
		f.shift, f.packed = 0, false
	}
	f.key = grow(f.key, k+b)
	for s, v := range f.score[:k] {
		f.key[s] = v<<f.shift | f.rankBits(f.rank[s])
	}
}

// rankBits returns the low bits of the key of a row of rank r: the rank
// reversed (the lowest rank has the highest bits), 0 for unshifted keys.
func (f *fastDUEL) rankBits(r int) int64 {
	if !f.packed {
		return 0
	}
	return int64(1)<<f.shift - 1 - int64(r)
}

// bestSlot returns the slot with the highest score, ties to the lowest rank.
func (f *fastDUEL) bestSlot() int {
	best := int64(math.MinInt64)
	for _, v := range f.key[:f.k] {
		best = max(best, v)
	}
	return f.slotOfKey(best)
}

// slotOfKey returns the slot that holds the highest key best among the
// slots' (ties to the lowest rank), or -1 when best is no row held.
func (f *fastDUEL) slotOfKey(best int64) int {
	if best <= keyLive {
		return -1
	}
	if f.packed {
		return f.order[f.rankOf(best)]
	}
	s := -1
	for c, v := range f.key[:f.k] {
		if v == best && (s < 0 || f.rank[c] < f.rank[s]) {
			s = c
		}
	}
	return s
}

// rankOf returns the rank held in the low bits of a packed key.
func (f *fastDUEL) rankOf(key int64) int {
	rmax := int64(1)<<f.shift - 1
	return int(rmax - key&rmax)
}

// batchOfKey returns the batch row (K+bp) that holds the highest key best
// among the first i batch rows' (ties to the lowest bp), or -1 when best
// is no row held.
func (f *fastDUEL) batchOfKey(best int64, i int) int {
	if best <= keyLive {
		return -1
	}
	k := f.k
	if f.packed {
		return k + f.rankOf(best)
	}
	for bp, v := range f.key[k : k+i] {
		if v == best {
			return k + bp
		}
	}
	return -1
}

// replace evicts J (a slot, or K+b for batch row b), inserts batch row i and
// returns the next victim. It is steps (b) and (c) of the reference, then
// step (a) for the next row, fused into one pass over the keys.
//
// A row that leaves gets the key keyGone, which stays below every held
// row's key: it can never be chosen again, so the pass needs no test of
// the selection.
func (f *fastDUEL) replace(J, i, b int, protect bool) int {
	k := f.k
	w := k + b
	key := f.key[:w]
	f.selected[J] = false
	f.held--
	ins := f.dots[i*w : (i+1)*w] // dots of incoming row i with every slot and batch row
	del := f.dotsOf(J, w)[:k]    // dots of J with every slot
	key[J] = keyGone

	// Rows held: with q = 1/2 + d*qUnit, "score -= q(J,c); score += q(i,c)"
	// is S += d(i,c) - d(J,c) in units of qUnit. The new row's score needs
	// the sum of d(i,c) over the rows held. scorePass runs this pass over
	// the slots, then over the batch rows before i. All of this is exact
	// integer arithmetic: it equals the reference's arithmetic bit for bit
	// (see similarity.go).
	memKey, sumD := scorePass(key[:k], ins[:k], del, f.shift)
	bestMem := f.slotOfKey(memKey)
	if bestMem >= 0 && f.carried != nil {
		// Most likely the next victim: its dots are fetched while the
		// batch rows are updated.
		f.carried.prefetchRow(bestMem)
		if i+1 < b {
			// The next pass also reads its run of the current part of the
			// ring and the next row's dots, written by either goroutine.
			f.carried.prefetchCur(bestMem, i+1)
			prefetch(f.dots[(i+1)*w : (i+2)*w])
		}
	}
	newKey := int64(math.MinInt64)
	if i > 0 {
		nk, sd := scorePass(key[k:k+i], ins[k:k+i], f.batchDotsOf(J, i, w), f.shift)
		newKey, sumD = nk, sumD+sd
	}
	// Insert i itself: its score is the sum of its q with the rows held,
	// itself included: S = held*2^22 + sumD + 2^22 + d(i,i).
	c := k + i
	f.selected[c] = true
	key[c] = (int64(f.held+1)<<22+sumD+int64(ins[c]))<<f.shift | f.rankBits(i)
	f.held++
	bestNew := f.batchOfKey(max(newKey, key[c]), i+1)
	if f.carried != nil {
		f.carried.placeRow(f, i, b)
	}

	// Next victim: a row held wins ties (lower position); new rows are
	// candidates only when not protected, or when no row held is left.
	switch {
	case bestMem < 0:
		return bestNew
	case protect || key[bestMem]>>f.shift >= key[bestNew]>>f.shift:
		return bestMem
	}
	return bestNew
}

// batchDotsOf returns the grid dots of J (a slot, or K+b for batch row b)
// with the first i batch rows: a run of a batch row's dots, or of the
// slots' columns transposed during the passes (see carried) when they are
// there, else the column of dots, copied.
func (f *fastDUEL) batchDotsOf(J, i, w int) []int32 {
	k := f.k
	if J >= k {
		return f.dots[(J-k)*w+k : (J-k)*w+k+i] // dots are symmetric
	}
	if f.carried != nil {
		if col := f.carried.columnsOf(J, i); col != nil {
			return col
		}
	}
	f.colJ = grow(f.colJ, i)
	for bp := range f.colJ {
		f.colJ[bp] = f.dots[bp*w+J]
	}
	return f.colJ
}

// dotsOf returns the grid dots of J (a slot, or K+b for batch row b) with
// every slot.
func (f *fastDUEL) dotsOf(J, w int) []int32 {
	k := f.k
	switch {
	case J >= k:
		return f.dots[(J-k)*w : (J-k)*w+k]
	case f.carried != nil:
		f.rowJ = grow(f.rowJ, k)
		return f.carried.row(f.rowJ, J)
	}
	f.rowJ = grow(f.rowJ, k)
	f.slots.dots(f.rowJ, k, f.slots.row(J), 1)
	return f.rowJ
}

// commit gives the rows that entered their slots (those of the rows they
// evicted) and updates order and rank, so that the state describes the
// memory after the update. The block's rows were written during the passes
// (carried.follow).
func (f *fastDUEL) commit(b int) {
	k := f.k
	order := make([]int, 0, k)
	for _, s := range f.order {
		if f.selected[s] {
			order = append(order, s)
			f.score[s] = f.key[s] >> f.shift
		}
	}
	for bp := 0; bp < b; bp++ {
		if !f.selected[k+bp] {
			continue
		}
		s := f.slotOf[bp]
		order = append(order, s)
		f.score[s] = f.key[k+bp] >> f.shift
		if f.carried == nil {
			f.slots.setRow(s, f.batch.row(bp))
		} else {
			f.carried.arrived(s, bp)
		}
	}
	f.order = order
	for p, s := range order {
		f.rank[s] = p
	}
	if f.carried != nil {
		f.carried.end()
	}
}

// parallelRows calls do on up to GOMAXPROCS contiguous ranges covering
// 0..n-1 (at least 64 rows each), concurrently, the last one on the
// caller's goroutine, and returns when all are done.
func parallelRows(n int, do func(r0, r1 int)) {
	par.For(n, min(runtime.GOMAXPROCS(0), n/64), do)
}

// sharedValues is the least number of values that the passes over rows
// on the way in (normalizeRows, gridSet.fromUnit) share out among the
// cores (see parallelValues).
const sharedValues = 1 << 17

// parallelValues is parallelRows for n rows of z values, on the caller's
// goroutine alone below sharedValues values. A batch's rows (256 of 256
// values: tens of microseconds of work on one core) arrive while the
// other core runs the end of the last update (see fastDUEL.update), where
// sharing them out costs more than it saves (BenchmarkDUELUpdate at
// (2048, 256, 256)). Larger passes (the memory's first fill, SetRows) are
// shared out.
func parallelValues(n, z int, do func(r0, r1 int)) {
	if n*z < sharedValues {
		do(0, n)
		return
	}
	parallelRows(n, do)
}

// rebuild computes the state from scratch for the memory of a: slot s holds
// the row at position s.
func (f *fastDUEL) rebuild(a *Arrival, maxBlock int64) {
	f.settle()
	k, z := a.K(), a.Z
	grids, flip := f.grids, f.flip // the batch's grid rows (see update)
	*f = fastDUEL{ready: true, k: k, z: z, grids: grids, flip: flip, wide: f.wide}
	f.slots.reset(k, z)
	for s := 0; s < k; s++ {
		f.slots.setUnit(s, a.Memory[s*z:(s+1)*z])
	}
	f.order, f.rank = identity(k), identity(k)
	f.score = make([]int64, k)
	if 4*int64(k)*int64(k) <= maxBlock {
		f.carried = newCarried(k, a.B())
		block := f.carried.block
		f.slots.dots(block, k, f.slots.rows, k)
		for s := 0; s < k; s++ {
			f.score[s] = sumS(block[s*k : (s+1)*k])
		}
		return
	}
	const panel = 256
	tmp := make([]int32, panel*k)
	for s0 := 0; s0 < k; s0 += panel {
		m := min(panel, k-s0)
		f.slots.dots(tmp, k, f.slots.rows[s0*z:(s0+m)*z], m)
		for r := 0; r < m; r++ {
			f.score[s0+r] = sumS(tmp[r*k : (r+1)*k])
		}
	}
}

// sumQ returns the sum of q over a row of grid dots (exact).
func sumQ(dots []int32) float64 { return float64(sumS(dots)) * qUnit }

// sumS returns the sum of q over a row of grid dots as the exact integer
// S = sum*2^23 (see scorepass.go).
func sumS(dots []int32) int64 {
	s := int64(len(dots)) << 22
	for _, d := range dots {
		s += int64(d)
	}
	return s
}

// grow returns s with length n and its first min(len(s), n) elements kept,
// reusing its storage when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	t := make([]T, n)
	copy(t, s)
	return t
}

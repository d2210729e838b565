package memory

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

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
//	score   the score of the row in each slot
//	block   the K x K grid dot products between slots (or, beyond
//	        MaxBlockBytes, nothing: each evicted row's dots are recomputed)
//	recent  the newest rows' dots with the older ones, transposed, until
//	        they are folded into block (see commit)
//
// and an update costs one B x (K+B) x Z product of int16 grid rows (the
// new rows against the memory and the batch, kernels/igemm: exact int32
// dots, see gridSet), B fused passes over the K+B scores (scorePass:
// AVX-512, eight slots at a time), and the bookkeeping of the block, O(K B)
// memory traffic (the batch's columns are transposed during the passes, on
// another goroutine; scattered writes use AVX-512 scatters). With igemm's
// kernel the product is computed in strips of batch rows by both
// goroutines, and the passes start with the first strip (see strips).
//
// Rows live in slots that never move; the memory order is kept apart (order,
// rank), so that a survivor's carried data stays where it is and a new row
// takes the slot of an evicted one. Ties are broken on rank, as the
// reference breaks them on position.
type fastDUEL struct {
	owner *Memory // the state describes owner's rows
	gen   uint64  // at this generation
	ready bool
	k, z  int

	slots    gridSet      // K grid rows, one per slot
	batch    gridSet      // B grid rows of the batch
	score    []float64    // K+B: the slots' scores, then the batch rows'
	selected []bool       // K+B: held now
	order    []int        // order[p]: slot at position p of the memory
	rank     []int        // rank[s]: position of slot s
	block    []int32      // K x K grid dots between slots; nil beyond the limit
	rowJ     []int32      // K: dots of one evicted slot (no block)
	dots     []int32      // B x (K+B): dots of each batch row with slots and batch
	colT     []int32      // K x B: dots transposed, being filled during an update
	colsDone atomic.Int64 // batch rows of colT filled so far
	gone     []int        // slots evicted during the current update
	tick     int          // updates committed since the last rebuild
	arrival  []int        // arrival[s]: tick at which slot s's occupant arrived
	recent   []recentCols // newcomers' columns not yet folded into block
	spare    [][]int32    // folded column buffers, for reuse
}

// update runs the policy on a and returns the evicted positions. It leaves
// the state describing the memory as the owner will hold it after applying
// them (generation a.gen+1); if the owner does something else, the next
// update sees another generation and rebuilds.
func (f *fastDUEL) update(a *Arrival, adm Admission, maxBlock int64) []int {
	if !f.ready || f.owner != a.owner || f.gen != a.gen || f.k != a.K() || f.z != a.Z {
		f.rebuild(a, maxBlock)
	}
	k, z, b := f.k, f.z, a.B()
	w := k + b // length of a row of dots

	f.batch.reset(b, z)
	parallelRows(b, func(i0, i1 int) { // rows and packed pairs are disjoint
		for i := i0; i < i1; i++ {
			f.batch.setUnit(i, a.Batch[i*z:(i+1)*z])
		}
	})
	f.dots = grow(f.dots, b*w)
	// Columns 0..K-1: the slots; K..K+B-1: the batch. With igemm's
	// kernel, two cores and a block, the product is computed in strips of
	// rows, and the score passes start as soon as their rows are there
	// (see strips).
	pipe := igemm.Accelerated() && f.block != nil && runtime.GOMAXPROCS(0) >= 2 &&
		b >= 2*stripRows && int64(k)*int64(b) <= pipeMaxCols
	var st *strips
	if pipe {
		st = f.newStrips(b, w)
	} else {
		dotsConcat(f.dots, w, f.batch.rows, b, &f.slots, &f.batch)
	}

	f.score = grow(f.score, w)
	f.selected = grow(f.selected, w)
	for c := range f.selected {
		f.selected[c] = c < k
	}

	// The slots' dots with the batch, transposed for the block (see
	// commit), are prepared on another goroutine while the score passes,
	// which are sequential, run. The passes read an evicted slot's dots
	// with the earlier batch rows there as soon as those rows are done
	// (one contiguous run instead of a column of dots).
	var colT []int32
	var wg sync.WaitGroup
	f.colsDone.Store(0)
	if f.block != nil {
		colT = f.spareCols(k * b)
		f.colT = colT
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st == nil {
				transposeCols(colT, f.dots, k, b, w, &f.colsDone)
				return
			}
			// Strips, and between them the rows of the strips done so
			// far, in order.
			t := 0 // rows transposed
			for {
				more := st.claim()
				for s := t / stripRows; s < st.n && st.done[s].Load(); s++ {
					end := min(b, (s+1)*stripRows)
					transposeRows(colT, f.dots, k, b, w, t, end, &f.colsDone)
					t = end
				}
				if !more {
					break
				}
			}
			st.waitAll()
			transposeRows(colT, f.dots, k, b, w, t, b, &f.colsDone)
		}()
	}

	evicted := make([]int, b)
	f.gone = f.gone[:0]
	J := f.bestSlot()
	for i := 0; i < b; i++ {
		if st != nil {
			st.waitRows(i + 1)
		}
		if J < k {
			evicted[i] = f.rank[J]
		} else {
			evicted[i] = J
		}
		J = f.replace(J, i, b, adm == Protected)
	}
	wg.Wait()
	f.colT = nil
	f.commit(b, colT)
	f.gen = a.gen + 1
	return evicted
}

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
			runtime.Gosched()
		}
	}
}

// waitAll returns when every strip is computed (without claiming any).
func (st *strips) waitAll() {
	for s := range st.done {
		for !st.done[s].Load() {
			runtime.Gosched()
		}
	}
}

// bestSlot returns the slot with the highest score, ties to the lowest rank.
func (f *fastDUEL) bestSlot() int {
	best := -1
	for s := 0; s < f.k; s++ {
		if best < 0 || evictsBefore(false, f.score[s], f.rank[s], false, f.score[best], f.rank[best]) {
			best = s
		}
	}
	return best
}

// replace evicts J (a slot, or K+b for batch row b), inserts batch row i and
// returns the next victim. It is steps (b) and (c) of the reference, then
// step (a) for the next row, fused into one pass over the scores.
//
// A row that leaves gets score -Inf, which the updates keep: it can never
// be chosen again, so the pass needs no test of the selection.
func (f *fastDUEL) replace(J, i, b int, protect bool) int {
	k := f.k
	w := k + b
	score := f.score[:w]
	f.selected[J] = false
	if J < k {
		f.gone = append(f.gone, J)
	}
	ins := f.dots[i*w : (i+1)*w] // dots of incoming row i with every slot and batch row
	del := f.dotsOf(J, w)[:k]    // dots of J with every slot
	score[J] = math.Inf(-1)

	// Rows held: with q = 1/2 + d*qUnit, "score -= q(J,c); score += q(i,c)"
	// is score += (d(i,c) - d(J,c))*qUnit. The new row's score needs the
	// sum of d(i,c) over the rows held: the sum over all slots minus the
	// slots gone. scorePass runs this pass eight slots at a time. All of
	// this is exact (see similarity.go): it equals the reference's
	// arithmetic bit for bit.
	bestMem, sumD := scorePass(score[:k], ins[:k], del, f.rank[:k])
	for _, c := range f.gone {
		sumD -= float64(ins[c])
	}
	held := k - len(f.gone)

	// Batch rows that entered before i: the dots of J with batch row bp are
	// column J of dots (equal to row J's, the dot products being exact),
	// read from the transposed copy when a slot's is ready (see update).
	var colJ []int32
	if J < k && f.colT != nil && f.colsDone.Load() >= int64(i) {
		colJ = f.colT[J*b : J*b+i]
	}
	bestNew := -1
	for bp := 0; bp < i; bp++ {
		c := k + bp
		var dJ int32
		if colJ != nil {
			dJ = colJ[bp]
		} else {
			dJ = f.dots[bp*w+J]
		}
		s := score[c] + (float64(ins[c])-float64(dJ))*qUnit
		score[c] = s
		if f.selected[c] {
			sumD += float64(ins[c])
			held++
			if bestNew < 0 || s > score[bestNew] {
				bestNew = c
			}
		}
	}
	// Insert i itself: its score is the sum of its q with the rows held,
	// itself included.
	c := k + i
	f.selected[c] = true
	score[c] = 0.5*float64(held) + sumD*qUnit + qOfInt(ins[c])
	if bestNew < 0 || score[c] > score[bestNew] {
		bestNew = c
	}

	// Next victim: a row held wins ties (lower position); new rows are
	// candidates only when not protected, or when no row held is left.
	switch {
	case bestMem < 0:
		return bestNew
	case protect || score[bestMem] >= score[bestNew]:
		return bestMem
	}
	return bestNew
}

// dotsOf returns the grid dots of J (a slot, or K+b for batch row b) with
// every slot.
func (f *fastDUEL) dotsOf(J, w int) []int32 {
	k := f.k
	switch {
	case J >= k:
		return f.dots[(J-k)*w : (J-k)*w+k]
	case f.block != nil:
		row := f.block[J*k : (J+1)*k]
		touch(row)
		f.applyRecent(row, J)
		return row
	}
	f.rowJ = grow(f.rowJ, k)
	f.slots.dots(f.rowJ, k, f.slots.row(J), 1)
	return f.rowJ
}

// commit moves the batch rows that entered into the slots freed by the
// evicted rows and updates order, rank and block, so that the state
// describes the memory after the update. colT holds the dots of every slot
// with every batch row, transposed (K x B), when there is a block.
func (f *fastDUEL) commit(b int, colT []int32) {
	k, w := f.k, f.k+b
	order := make([]int, 0, k)
	var freed []int
	for _, s := range f.order {
		if f.selected[s] {
			order = append(order, s)
		} else {
			freed = append(freed, s)
		}
	}
	type arrival struct{ bp, slot int }
	var arrived []arrival
	for bp := 0; bp < b; bp++ {
		if !f.selected[k+bp] {
			continue
		}
		s := freed[len(arrived)]
		arrived = append(arrived, arrival{bp, s})
		order = append(order, s)
		f.score[s] = f.score[k+bp]
	}
	f.order = order
	for p, s := range order {
		f.rank[s] = p
	}
	if f.block == nil {
		for _, in := range arrived {
			f.slots.setRow(in.slot, f.batch.row(in.bp))
		}
		return
	}
	// Rows of the new slots: their dots with every slot held, then with
	// each other (this also overwrites what the freed slots held). A
	// row is thus complete for every row older than it.
	parallelRows(len(arrived), func(a0, a1 int) {
		for _, in := range arrived[a0:a1] {
			f.slots.setRow(in.slot, f.batch.row(in.bp)) // disjoint rows and pairs
			row := f.block[in.slot*k : (in.slot+1)*k]
			src := f.dots[in.bp*w : (in.bp+1)*w]
			copy(row, src[:k])
			for _, other := range arrived {
				row[other.slot] = src[k+other.bp]
			}
		}
	})
	// Columns of the new slots: the older rows' dots with the newcomers.
	// Writing them into the block now would scatter B values into every
	// row; instead they are kept transposed (one contiguous run of B values
	// per slot, prepared by update during the score passes), read from
	// there when an older row is evicted (dotsOf), and folded into the
	// block every foldEvery updates, when the newcomers of several updates
	// fill most of each row's cache lines at once.
	f.tick++
	cols := recentCols{tick: f.tick, slots: make([]int32, b), colT: colT}
	for bp := range cols.slots {
		cols.slots[bp] = -1 // did not enter
	}
	for _, in := range arrived {
		f.arrival[in.slot] = f.tick
		if in.slot >= k {
			panic("memory: slot out of range") // scatter relies on it
		}
		cols.slots[in.bp] = int32(in.slot)
	}
	f.recent = append(f.recent, cols)
	if len(f.recent) == foldEvery {
		f.fold()
	}
}

// transposeCols writes colT[c*b+bp] = dots[bp*w+c] for c < k, bp < b,
// eight rows of dots at a time: eight sequential reads, and 32 contiguous
// bytes written per row of colT.
//
// It stores in done the number of batch rows transposed so far.
func transposeCols(colT, dots []int32, k, b, w int, done *atomic.Int64) {
	transposeRows(colT, dots, k, b, w, 0, b, done)
}

// transposeRows is transposeCols for batch rows bp0..bp1-1 (bp0 a multiple
// of eight), with the rows before bp0 already done.
func transposeRows(colT, dots []int32, k, b, w, bp0, bp1 int, done *atomic.Int64) {
	bp := bp0
	for ; bp+8 <= bp1; bp += 8 {
		row := func(r int) []int32 { return dots[(bp+r)*w : (bp+r)*w+k] }
		r0, r1, r2, r3, r4, r5, r6, r7 := row(0), row(1), row(2), row(3), row(4), row(5), row(6), row(7)
		for c := range r0 {
			d := colT[c*b+bp : c*b+bp+8 : c*b+bp+8]
			d[0], d[1], d[2], d[3] = r0[c], r1[c], r2[c], r3[c]
			d[4], d[5], d[6], d[7] = r4[c], r5[c], r6[c], r7[c]
		}
		done.Store(int64(bp + 8))
	}
	for ; bp < bp1; bp++ {
		for c, v := range dots[bp*w : bp*w+k] {
			colT[c*b+bp] = v
		}
	}
	done.Store(int64(bp1))
}

// foldEvery is how many updates' newcomer columns are kept transposed
// before they are folded into the block. A fold reads and writes the whole
// block (memory bound: about 2.5 ms at K = 2048 on the project machine), so
// it pays to fold rarely; each evicted row then takes the columns of up to
// foldEvery-1 recent updates (hot scatters, ~0.1 us each). 8 cut the mean
// update at (2048, 256, 256) by about a quarter against 4; 16 was no
// better than 8 (BenchmarkDUELCarry, alternating runs).
const foldEvery = 8

// recentCols holds, for the batch of one update (tick), the dots of every
// slot's occupant at that time with each batch row: colT[c*B + bp] for slot
// c and batch row bp, which took slot slots[bp] (-1: it did not enter).
type recentCols struct {
	tick  int
	slots []int32
	colT  []int32
}

// applyRecent completes row, the block row of slot c, with the dots of the
// newcomers that arrived after c's occupant (in arrival order, so that a
// slot taken twice ends with its current occupant's value).
func (f *fastDUEL) applyRecent(row []int32, c int) {
	for _, r := range f.recent {
		if r.tick <= f.arrival[c] {
			continue // c arrived later: its own row has these dots
		}
		n := len(r.slots)
		scatter(row[:f.k], r.colT[c*n:(c+1)*n], r.slots)
	}
}

// fold writes the recent newcomers' columns into every row of the block.
func (f *fastDUEL) fold() {
	k := f.k
	parallelRows(k, func(c0, c1 int) {
		for c := c0; c < c1; c++ {
			row := f.block[c*k : (c+1)*k]
			touch(row)
			f.applyRecent(row, c)
		}
	})
	for _, r := range f.recent {
		f.spare = append(f.spare, r.colT)
	}
	if n := len(f.spare); n > foldEvery { // batch sizes changed: drop the oldest
		f.spare = append(f.spare[:0], f.spare[n-foldEvery:]...)
	}
	f.recent = f.recent[:0]
}

// touch reads one value per cache line of row, in order, so that the
// hardware prefetcher streams the row into the cache before it is written
// at scattered places (which alone would miss on almost every line).
func touch(row []int32) {
	var sink int32
	for i := 0; i < len(row); i += 16 {
		sink |= row[i]
	}
	touchSink.Store(sink)
}

// touchSink keeps touch's reads from being optimised away.
var touchSink atomic.Int32

// spareCols returns a buffer of n floats, reusing a folded one if possible.
func (f *fastDUEL) spareCols(n int) []int32 {
	for i, b := range f.spare {
		if cap(b) >= n {
			f.spare = append(f.spare[:i], f.spare[i+1:]...)
			return b[:n]
		}
	}
	return make([]int32, n)
}

// parallelRows calls do on up to GOMAXPROCS contiguous ranges covering
// 0..n-1 (at least 64 rows each), concurrently, the last one on the
// caller's goroutine, and returns when all are done.
func parallelRows(n int, do func(r0, r1 int)) {
	t := min(runtime.GOMAXPROCS(0), max(1, n/64))
	var wg sync.WaitGroup
	for i := 0; i < t-1; i++ {
		r0, r1 := n*i/t, n*(i+1)/t
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(r0, r1)
		}()
	}
	do(n*(t-1)/t, n)
	wg.Wait()
}

// rebuild computes the state from scratch for the memory of a: slot s holds
// the row at position s.
func (f *fastDUEL) rebuild(a *Arrival, maxBlock int64) {
	k, z := a.K(), a.Z
	*f = fastDUEL{owner: a.owner, gen: a.gen, ready: true, k: k, z: z}
	f.slots.reset(k, z)
	for s := 0; s < k; s++ {
		f.slots.setUnit(s, a.Memory[s*z:(s+1)*z])
	}
	f.order, f.rank = identity(k), identity(k)
	f.arrival = make([]int, k)
	f.score = make([]float64, k)
	if 4*int64(k)*int64(k) <= maxBlock {
		f.block = make([]int32, k*k)
		// The transposed columns of the next foldEvery updates, allocated
		// (and their pages touched) now rather than one per update until
		// the first fold, as the steady state reuses them.
		for range foldEvery {
			cols := make([]int32, k*a.B())
			for i := 0; i < len(cols); i += 1024 {
				cols[i] = 0
			}
			f.spare = append(f.spare, cols)
		}
		f.slots.dots(f.block, k, f.slots.rows, k)
		for s := 0; s < k; s++ {
			f.score[s] = sumQ(f.block[s*k : (s+1)*k])
		}
		return
	}
	const panel = 256
	tmp := make([]int32, panel*k)
	for s0 := 0; s0 < k; s0 += panel {
		m := min(panel, k-s0)
		f.slots.dots(tmp, k, f.slots.rows[s0*z:(s0+m)*z], m)
		for r := 0; r < m; r++ {
			f.score[s0+r] = sumQ(tmp[r*k : (r+1)*k])
		}
	}
}

// sumQ returns the sum of q over a row of grid dots.
func sumQ(dots []int32) float64 {
	var s float64
	for _, d := range dots {
		s += qOfInt(d)
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

package gemm

import (
	"sync"
	"sync/atomic"
)

// call is the shared state of one Sgemm call: the problem, the packed B
// blocks (double-buffered when several threads share them), one workspace
// per thread and the progress counters of every block. Calls are recycled
// through callPool so that steady-state calls allocate nothing.
type call struct {
	p          problem
	k          *kernel
	threads    int
	splitM     bool         // units of work are row chunks of C (else groups of micro-panels)
	unitRows   int          // rows of C per unit when splitM, at most (see rowSpan)
	rowUnits   int          // units of rows when splitM
	unitPanels int          // micro-panels of B per unit otherwise
	nbuf       int          // packed B buffers in use: 1, or 2 with several threads
	directB    bool         // whole micro-panels of B are read in place, not packed
	directA    bool         // whole micro-panels of A are read in place, not packed
	rowsOnly   bool         // runRows: row chunks computed whole, nothing shared between threads
	privateB   bool         // in runRows, each thread packs the sub-blocks of B it uses itself
	colsOnly   bool         // runCols: op(A) packed once, column groups of C computed whole
	prepackB   bool         // runRows with all of op(B) packed first, by all threads
	packAll    []float32    // all of op(A) packed, in runCols; all of op(B), with prepackB
	preNext    atomic.Int32 // next packing task to claim, in runCols or with prepackB
	preDone    atomic.Int32 // packing tasks done, in runCols or with prepackB
	packB      [2][]float32
	ws         []*workspace
	blocks     []blockState
	maxUnits   int            // units per block, at most
	unitDone   []atomic.Int32 // unitDone[g*maxUnits+u] == 1 when unit u of block g is done
	nextUnit   atomic.Int32   // next row chunk to claim, in runRows
}

// blockState counts the progress on one kc x nc block of op(B): micro-panels
// claimed and packed, units of work claimed and done.
type blockState struct {
	packNext, packDone atomic.Int32
	workNext, workDone atomic.Int32
	units              int32
}

// workspace is one thread's private buffers: a packed block of A, a
// scratch tile for edges and, in runRows, a packed partial panel of B.
type workspace struct {
	packA, tile []float32
	edgeB       []float32 // the partial panel of B, in runRows
	subB        []float32 // a packed kc x ns sub-block of B, in runRows with privateB
}

var callPool = sync.Pool{New: func() any { return new(call) }}

// unitsPerThread is how many units of work each thread gets on average:
// enough for the claiming to even out threads slowed down unequally.
const unitsPerThread = 8

// Row chunks of C when each thread packs its own B (call.privateB): about
// privateUnitsPerThread per thread, used only when that makes them at
// least privateMinRows rows, at most privateMaxRows: on Zen 5 (2 threads)
// it beats the shared packed B on large products and loses with smaller
// row chunks (bench/RESULTS.md, "Choices").
const (
	privateUnitsPerThread = 4
	privateMinRows        = 128
	privateMaxRows        = 1024
)

// minUnitsPerThread is the fewest row chunks per thread that minUnitPanels
// may leave: fewer, and one chunk more for one thread is a large imbalance
// (256^3 in chunks of 4 micro-panels: 5 chunks for 2 threads).
const minUnitsPerThread = 4

// minUnitPanels is the fewest micro-panels of A (mr rows each) in a unit of
// rows when the rows allow it: each sub-block of B brought into L2 serves
// every micro-panel of the unit, so a unit of one micro-panel reads B from
// L3 or memory for every mr rows of C.
const minUnitPanels = 4

// directAMaxCols is the largest n for which A is read in place (see
// getCall); chosen by measurement.
const directAMaxCols = 256

// prepackMaxB is the largest packed op(B) (in bytes) that the threads pack
// whole before computing their row chunks (call.prepackB): 2048^3 is
// 16 MiB.
const prepackMaxB = 16 << 20

// colPanels is about how many micro-panels of B a column group has in
// runCols: more read the packed op(A) fewer times, fewer balance the
// threads better. On Zen 5 (2 threads, 64x576x32768 and 32x576x32768) 3
// panels beat 2 and 1.
const colPanels = 3

// colsOnlyMaxA is the largest packed op(A) (in bytes) that threads
// splitting the columns of C pack once and share (runCols): 64 x 32768, a
// weight gradient, is 8 MiB.
const colsOnlyMaxA = 16 << 20

// rowsOnlyMaxB is the largest B (in bytes) for which the threads compute
// whole row chunks of C (runRows), each reading all of B: a quarter of the
// 32 MiB L3. Larger Bs are processed block by block, each block of B read
// from memory once (64x576x32768 runs slower with runRows).
const rowsOnlyMaxB = 8 << 20

// l1Crowding returns how many distinct cache lines of rows rows, ld floats
// apart, fall into the same set of a 64-set L1 cache with 64-byte lines
// (32-48 KiB, 8-12 ways). Reading A in place with a stride that crowds its
// rows into few sets (a multiple of 1 KiB, say) thrashes the cache and was
// measured slower than packing.
func l1Crowding(ld, rows int) int {
	var sets [64]int
	most, last := 0, -1
	for i := 0; i < rows; i++ {
		line := i * ld * 4 / 64
		if line == last {
			continue // rows sharing a line do not compete
		}
		last = line
		sets[line%64]++
		most = max(most, sets[line%64])
	}
	return most
}

// packBMinRows is the number of rows of C from which a non-transposed B
// whose sub-blocks crowd the sets of L2 is packed rather than read in
// place: packing copies each element of B once for 2*m flops, a small
// cost from a few hundred rows on (Zen 5, 2 threads: packing pays at
// 1024^3 and 2048^3, reading in place at 64x576x32768; bench/RESULTS.md,
// "Choices").
const packBMinRows = 256

// packBInstead reports whether a non-transposed B should be packed
// although the kernel can read it in place: when C has at least
// packBMinRows rows and a kc x ns sub-block of B, read in place with its
// row stride, would put more lines in one set of L2 than half its ways
// (power-of-two strides do), so that it could not stay in L2.
func packBInstead(kn *kernel, p *problem, hw hardware) bool {
	if p.m < packBMinRows {
		return false
	}
	kc, cols := min(kn.kc, p.k), min(kn.ns, p.n)
	return crowding(p.ldb*4, kc, cols*4, hw.l2/(l2Ways*64)) > l2Ways/2
}

// l2Ways is the associativity assumed for L2 (16 on Zen 4, Zen 5 and
// Sapphire Rapids).
const l2Ways = 16

// crowding estimates how many 64-byte lines rows rows of width bytes each,
// stride bytes apart, put in one set of a cache of sets sets. The row
// starts fall, modulo the size of a way (64*sets bytes), on the multiples
// of g = gcd(stride, way): way/g places, each followed by the row's lines,
// so the rows cover min(sets, way/g * lines per row) sets. With a 4 KiB
// stride and a 64 KiB way, 432 rows of 18 lines cover 288 sets, 27 lines
// each; with a stride of 2304 bytes they cover all 1024, 7.6 each.
func crowding(stride, rows, width, sets int) int {
	if sets <= 0 || rows <= 0 || width <= 0 {
		return 0
	}
	way := 64 * sets
	g := way
	for s := stride % way; s != 0; {
		g, s = s, g%s
	}
	lines := ceilDiv(width, 64)
	covered := min(sets, way/g*lines)
	return ceilDiv(rows*lines, covered)
}

// getCall returns a call for p with kernel kn on up to threads threads, its
// buffers sized and its counters reset.
func getCall(kn *kernel, p *problem, threads int) *call {
	c := callPool.Get().(*call)
	c.p, c.k = *p, kn
	c.splitM, threads = split(kn, p, threads)
	c.threads = threads
	rp := ceilDiv(p.m, kn.mr)
	var mc int
	if c.splitM {
		// Units of a single thread are as large as mc allows; with several,
		// about unitsPerThread each, but no smaller than minUnitPanels
		// micro-panels of A while each thread still gets minUnitsPerThread.
		per := ceilDiv(rp, threads*unitsPerThread)
		if threads > 1 {
			per = max(per, min(minUnitPanels, rp/(threads*minUnitsPerThread)))
		} else {
			per = rp
		}
		c.unitRows = min(kn.mc, kn.mr*per)
		mc = c.unitRows
	} else {
		c.unitPanels = ceilDiv(ceilDiv(min(kn.nc, p.n), kn.nr), threads*unitsPerThread)
		mc = rp * kn.mr
	}
	// A B that is not transposed is read in place (if the kernel's tile is
	// wide enough, see kernel.bInPlace): its micro-panels are rows of nr
	// floats ldb apart, which the hardware prefetchers follow as well as a
	// packed panel (measured), and copying it would cost as much as using it
	// when C has few rows. Only edge panels are packed.
	c.directB = p.src == nil && !p.transB && kn.bInPlace && !packBInstead(kn, p, machine)
	// A is read in place when C has few columns: each element of A then
	// serves only 2*n flops and packing it would cost a good part of that.
	c.directA = !p.transA && p.alpha == 1 && kn.microDirectA != nil && p.n <= directAMaxCols &&
		l1Crowding(p.lda, kn.mr) <= 4
	c.rowsOnly = c.splitM && c.directB && 4*float64(p.k)*float64(p.n) <= rowsOnlyMaxB
	c.privateB, c.colsOnly = false, false
	// A B that must be packed is packed by each thread for itself, a
	// sub-block at a time, when the row chunks can be made large enough
	// for the copies to cost little (one per 2*privateMinRows flops): the
	// threads then never wait for each other, which matters when other
	// processes take turns on the cores.
	c.prepackB = false
	if threads > 1 && c.splitM && !c.directB && 4*float64(p.k)*float64(ceilDiv(p.n, kn.nr)*kn.nr) <= prepackMaxB {
		// A B that must be packed and is not too large is packed whole
		// first, by all threads; the row chunks then need no other wait.
		c.rowsOnly, c.prepackB = true, true
		// Each row chunk reads all of the packed B: about
		// privateUnitsPerThread chunks per thread read it fewer times.
		c.unitRows = max(c.unitRows, min(kn.mr*ceilDiv(rp, threads*privateUnitsPerThread), privateMaxRows/kn.mr*kn.mr))
		mc = c.unitRows
		c.packAll = grow(c.packAll, ceilDiv(p.k, kn.kc)*ceilDiv(p.n, kn.nr)*kn.nr*kn.kc)
		c.preNext.Store(0)
		c.preDone.Store(0)
	} else if rows := kn.mr * ceilDiv(rp, threads*privateUnitsPerThread); threads > 1 && c.splitM && !c.directB && rows >= privateMinRows {
		c.rowsOnly, c.privateB = true, true
		c.unitRows = min(rows, privateMaxRows/kn.mr*kn.mr)
		mc = c.unitRows
	}
	// Threads splitting the columns of a B read in place share one packing
	// of all of op(A) when it is small enough, and then never wait.
	if !c.splitM && c.directB && !c.directA && 4*float64(rp*kn.mr)*float64(p.k) <= colsOnlyMaxA {
		c.colsOnly = true
		// Groups of about colPanels micro-panels, as many per thread: each
		// group reads all of the packed op(A) again.
		panels := ceilDiv(p.n, kn.nr)
		c.unitPanels = ceilDiv(panels, threads*ceilDiv(panels, threads*colPanels))
		c.packAll = grow(c.packAll, ceilDiv(p.k, kn.kc)*rp*kn.mr*kn.kc)
		c.preNext.Store(0)
		c.preDone.Store(0)
	}
	kc := min(kn.kc, p.k)
	nb := ceilDiv(min(kn.nc, p.n), kn.nr) * kn.nr * kc
	if c.directB {
		nb = kn.nr * kc // only a partial panel is packed
	}
	c.nbuf = 1
	if threads > 1 {
		c.nbuf = 2
	}
	for i := 0; i < c.nbuf; i++ {
		c.packB[i] = grow(c.packB[i], nb)
	}
	for len(c.ws) < threads {
		c.ws = append(c.ws, new(workspace))
	}
	for _, w := range c.ws[:threads] {
		w.packA = grow(w.packA, ceilDiv(mc, kn.mr)*kn.mr*kc)
		w.tile = grow(w.tile, kn.mr*kn.nr)
		if c.rowsOnly || c.colsOnly {
			w.edgeB = grow(w.edgeB, kn.nr*kc)
		}
		if c.privateB {
			w.subB = grow(w.subB, ceilDiv(min(kn.ns, p.n), kn.nr)*kn.nr*kc)
		}
	}
	c.nextUnit.Store(0)
	nblocks := ceilDiv(p.n, kn.nc) * ceilDiv(p.k, kn.kc)
	if cap(c.blocks) < nblocks {
		c.blocks = make([]blockState, nblocks)
	}
	c.blocks = c.blocks[:nblocks]
	if c.splitM {
		c.rowUnits = balancedUnits(rp, c.unitRows/kn.mr, threads)
		c.maxUnits = c.rowUnits
	} else {
		c.maxUnits = ceilDiv(ceilDiv(min(kn.nc, p.n), kn.nr), c.unitPanels)
	}
	if cap(c.unitDone) < nblocks*c.maxUnits {
		c.unitDone = make([]atomic.Int32, nblocks*c.maxUnits)
	}
	c.unitDone = c.unitDone[:nblocks*c.maxUnits]
	for i := range c.unitDone {
		c.unitDone[i].Store(0)
	}
	g := 0
	for jc := 0; jc < p.n; jc += kn.nc {
		panels := ceilDiv(min(kn.nc, p.n-jc), kn.nr)
		var units int
		if c.splitM {
			units = c.rowUnits
		} else {
			units = ceilDiv(panels, c.unitPanels)
		}
		for pc := 0; pc < p.k; pc += kn.kc {
			b := &c.blocks[g]
			b.packNext.Store(0)
			b.packDone.Store(0)
			b.workNext.Store(0)
			b.workDone.Store(0)
			b.units = int32(units)
			g++
		}
	}
	return c
}

// balancedUnits returns how many row chunks the rp micro-panels of A are
// split into when a chunk holds at most per of them: the fewest that
// allow it, rounded up to a multiple of threads while each chunk keeps a
// micro-panel, so that every thread claims as many chunks and, since
// rowSpan makes them differ by one micro-panel at most, about as many
// rows. Chunks of a fixed size left one short chunk: 512 rows in chunks
// of 70 are 7 full ones and one of 22, 280 rows for one thread and 232
// for the other.
func balancedUnits(rp, per, threads int) int {
	units := ceilDiv(rp, max(per, 1))
	if r := units % threads; r != 0 && units+threads-r <= rp {
		units += threads - r
	}
	return units
}

// rowSpan returns the first row and the number of rows of C in row chunk
// u of the call's rowUnits: the micro-panels of A shared as evenly as
// possible, at most unitRows rows a chunk.
func (c *call) rowSpan(u int) (ic, mc int) {
	rp := ceilDiv(c.p.m, c.k.mr)
	q0, q1 := u*rp/c.rowUnits, (u+1)*rp/c.rowUnits
	ic = q0 * c.k.mr
	return ic, min(q1*c.k.mr, c.p.m) - ic
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

// split decides how threads divide p: by row chunks of C (splitM), or, when
// C has too few rows to give each thread minUnitPanels micro-panels of A (a
// chunk would then bring each sub-block of B into L2 for few rows), by
// groups of micro-panels of B (each thread then packs all of op(A), at most
// mc rows). It also caps threads at what can be shared.
func split(kn *kernel, p *problem, threads int) (splitM bool, t int) {
	rp, cp := ceilDiv(p.m, kn.mr), ceilDiv(min(p.n, kn.nc), kn.nr)
	if threads <= 1 || max(rp, cp) < 2 {
		return true, 1
	}
	if rp >= minUnitPanels*threads || rp*kn.mr > kn.mc || cp < 2*threads {
		return true, min(threads, rp)
	}
	return false, min(threads, cp)
}

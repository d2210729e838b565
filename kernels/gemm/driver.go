package gemm

import "github.com/duel-ssl/duel/internal/par"

// MinParallelFlops is the size of a product (2*m*n*k flops) below which
// Sgemm stays on the caller's goroutine; callers that run batches of
// smaller products can split the batch across goroutines themselves.
// Smaller products gain from a second thread only while an idle worker is
// still spinning (back-to-back calls, see par.RunShares): waking a parked
// one costs tens of microseconds, which two threads win back only from
// about 160^3 on. 8e6 is about 2*159^3.
const MinParallelFlops = 8_000_000

// sgemm runs p with kernel kn on at most maxThreads threads.
func sgemm(kn *kernel, p problem, maxThreads int) { sgemmAdjusted(kn, p, maxThreads, nil) }

// sgemmAdjusted is sgemm with adjust, when not nil, applied to the call
// before it runs: tests use it to force a way of splitting the work.
func sgemmAdjusted(kn *kernel, p problem, maxThreads int, adjust func(*call)) {
	if p.trivial() {
		return
	}
	kn = kn.forRows(p.m)
	threads := threadsUpTo(2*float64(p.m)*float64(p.n)*float64(p.k), maxThreads)
	c := getCall(kn, &p, threads)
	if adjust != nil {
		adjust(c)
	}
	par.RunShares(c.threads, c) // every share at once: run's waits rely on it
	putCall(c)
}

// threadsFor returns the number of threads sgemm runs p on with kernel kn
// and at most maxThreads threads.
func threadsFor(kn *kernel, p *problem, maxThreads int) int {
	if 2*float64(p.m)*float64(p.n)*float64(p.k) < MinParallelFlops {
		return 1
	}
	_, t := split(kn.forRows(p.m), p, maxThreads)
	return t
}

// Share runs share t of the call (par.Sharer).
func (c *call) Share(t int) { c.run(t) }

// run executes share t of the call. The blocks of op(B) (nc columns by kc
// steps) are processed in order; in each, the threads first claim and pack
// micro-panels of B until the block is packed, then claim units of work
// (row chunks of C, or groups of micro-panels when C has few rows) until none
// is left. Claiming from atomic counters balances the threads even when one
// of them is slowed down by another process. The packed blocks alternate
// between two buffers; before packing block g a thread waits until every
// unit of block g-2, which used the same buffer, is done; before computing
// a unit of block g it waits until the same unit (same tiles of C) is done
// for block g-1, since C accumulates over the kc blocks in order. There is
// no other barrier.
func (c *call) run(t int) {
	if c.rowsOnly {
		c.runRows(t)
		return
	}
	if c.colsOnly {
		c.runCols(t)
		return
	}
	p, kn := &c.p, c.k
	mr, nr := kn.mr, kn.nr
	ws := c.ws[t]
	g := 0
	for jc := 0; jc < p.n; jc += kn.nc {
		nc := min(kn.nc, p.n-jc)
		panels := ceilDiv(nc, nr)
		for pc := 0; pc < p.k; pc += kn.kc {
			kc := min(kn.kc, p.k-pc)
			blk := &c.blocks[g]
			bp := c.packB[g%c.nbuf]
			if g >= c.nbuf {
				prev := &c.blocks[g-c.nbuf]
				par.SpinWait(&prev.workDone, prev.units)
			}
			for {
				q := int(blk.packNext.Add(1)) - 1
				if q >= panels {
					break
				}
				switch {
				case !c.directB:
					p.packB(bp, pc, kc, jc, nc, nr, q, q+1)
				case (q+1)*nr > nc:
					// Reading B in place, only the partial panel is packed, alone.
					p.packB(bp, pc, kc, jc+q*nr, nc-q*nr, nr, 0, 1)
				}
				blk.packDone.Add(1)
			}
			par.SpinWait(&blk.packDone, int32(panels))
			beta := p.beta
			if pc > 0 {
				beta = 1
			}
			aPacked := false
			for {
				u := int(blk.workNext.Add(1)) - 1
				if u >= int(blk.units) {
					break
				}
				if pc > 0 {
					// C accumulates over the kc blocks in order: this unit's
					// tiles must be done for the previous block.
					par.SpinWait(&c.unitDone[(g-1)*c.maxUnits+u], 1)
				}
				if c.splitM {
					ic, mc := c.rowSpan(u)
					if !c.directA {
						packA(ws.packA, p.a, p.lda, p.transA, ic, mc, pc, kc, mr, p.alpha)
					} else if mc%mr != 0 {
						// Only the partial panel at the bottom is packed.
						packA(ws.packA, p.a, p.lda, p.transA, ic+mc-mc%mr, mc%mr, pc, kc, mr, p.alpha)
					}
					c.macro(ws, ws.packA, bp, ic, mc, jc, nc, pc, kc, 0, panels, beta)
				} else {
					if !aPacked {
						if !c.directA {
							packA(ws.packA, p.a, p.lda, p.transA, 0, p.m, pc, kc, mr, p.alpha)
						} else if p.m%mr != 0 {
							packA(ws.packA, p.a, p.lda, p.transA, p.m-p.m%mr, p.m%mr, pc, kc, mr, p.alpha)
						}
						aPacked = true
					}
					q0 := u * c.unitPanels
					c.macro(ws, ws.packA, bp, 0, p.m, jc, nc, pc, kc, q0, min(panels, q0+c.unitPanels), beta)
				}
				c.unitDone[g*c.maxUnits+u].Store(1)
				blk.workDone.Add(1)
			}
			g++
		}
	}
}

// runRows executes share t of a call that shares no packed data between
// threads: B is read in place and the threads split the rows of C. A thread
// claims a chunk of rows and computes it whole, through every block of B,
// packing its own A (and the partial panel of B at the right edge, if any).
// The threads never wait for each other until the end of the call. Each
// chunk reads all of B, so this is used only while B fits well in L3 (see
// rowsOnlyMaxB); otherwise run's block order reads each block of B from
// memory once.
func (c *call) runRows(t int) {
	p, kn := &c.p, c.k
	mr, nr := kn.mr, kn.nr
	ws := c.ws[t]
	stride := ceilDiv(p.n, nr) * nr * kn.kc // floats per kc block of the whole packed B, with prepackB
	if c.prepackB {
		// Tasks of prepackGroup micro-panels of one kc block of B.
		groups := ceilDiv(ceilDiv(p.n, nr), prepackGroup)
		tasks := ceilDiv(p.k, kn.kc) * groups
		for {
			i := int(c.preNext.Add(1)) - 1
			if i >= tasks {
				break
			}
			pc, q0 := i/groups*kn.kc, i%groups*prepackGroup
			q1 := min(ceilDiv(p.n, nr), q0+prepackGroup)
			p.packB(c.packAll[pc/kn.kc*stride:], pc, min(kn.kc, p.k-pc), 0, p.n, nr, q0, q1)
			c.preDone.Add(1)
		}
		par.SpinWait(&c.preDone, int32(tasks))
	}
	for {
		u := int(c.nextUnit.Add(1)) - 1
		if u >= c.rowUnits {
			return
		}
		ic, mc := c.rowSpan(u)
		for jc := 0; jc < p.n; jc += kn.nc {
			nc := min(kn.nc, p.n-jc)
			panels := ceilDiv(nc, nr)
			for pc := 0; pc < p.k; pc += kn.kc {
				kc := min(kn.kc, p.k-pc)
				if c.directB && nc%nr != 0 {
					q := panels - 1
					p.packB(ws.edgeB, pc, kc, jc+q*nr, nc-q*nr, nr, 0, 1)
				}
				beta := p.beta
				if pc > 0 {
					beta = 1
				}
				if !c.directA {
					packA(ws.packA, p.a, p.lda, p.transA, ic, mc, pc, kc, mr, p.alpha)
				} else if mc%mr != 0 {
					packA(ws.packA, p.a, p.lda, p.transA, ic+mc-mc%mr, mc%mr, pc, kc, mr, p.alpha)
				}
				bp := ws.edgeB
				if c.prepackB {
					bp = c.packAll[pc/kn.kc*stride+jc*kc:]
				}
				c.macro(ws, ws.packA, bp, ic, mc, jc, nc, pc, kc, 0, panels, beta)
			}
		}
	}
}

// prepackGroup is the number of micro-panels of B a thread claims at a
// time when the threads pack all of op(B) first (call.prepackB).
const prepackGroup = 8

// runCols executes share t of a call whose threads split the columns of C
// and read B in place (colsOnly): the threads first pack all of op(A),
// claiming kc blocks, and wait until it is packed; then each claims groups
// of micro-panels of B and computes those columns of C whole, through
// every kc block, with no other wait. Packing A once for all the threads
// and all the column groups is what makes the groups independent.
func (c *call) runCols(t int) {
	p, kn := &c.p, c.k
	mr, nr := kn.mr, kn.nr
	ws := c.ws[t]
	blocks := ceilDiv(p.k, kn.kc)
	stride := ceilDiv(p.m, mr) * mr * kn.kc
	for {
		g := int(c.preNext.Add(1)) - 1
		if g >= blocks {
			break
		}
		pc := g * kn.kc
		packA(c.packAll[g*stride:], p.a, p.lda, p.transA, 0, p.m, pc, min(kn.kc, p.k-pc), mr, p.alpha)
		c.preDone.Add(1)
	}
	par.SpinWait(&c.preDone, int32(blocks))
	panels := ceilDiv(p.n, nr)
	units := ceilDiv(panels, c.unitPanels)
	for {
		u := int(c.nextUnit.Add(1)) - 1
		if u >= units {
			return
		}
		q0, q1 := u*c.unitPanels, min(panels, (u+1)*c.unitPanels)
		for pc := 0; pc < p.k; pc += kn.kc {
			kc := min(kn.kc, p.k-pc)
			if q1*nr > p.n {
				q := q1 - 1
				p.packB(ws.edgeB, pc, kc, q*nr, p.n-q*nr, nr, 0, 1)
			}
			beta := p.beta
			if pc > 0 {
				beta = 1
			}
			c.macro(ws, c.packAll[pc/kn.kc*stride:], ws.edgeB, 0, p.m, 0, p.n, pc, kc, q0, q1, beta)
		}
	}
}

// macro multiplies the packed mc x kc block of A (pa) by the micro-panels
// q0 <= q < q1 of the kc x nc block of B into C[ic:ic+mc, jc:jc+nc]. The
// micro-panels of B are taken ns columns at a time: each kc x ns sub-block
// stays in L2 while every micro-panel of A (mr x kc, in L1) sweeps it.
func (c *call) macro(ws *workspace, pa, bp []float32, ic, mc, jc, nc, pc, kc, q0, q1 int, beta float32) {
	kn, p := c.k, &c.p
	mr, nr := kn.mr, kn.nr
	cm, ldc := p.c, p.ldc
	// The micro-panels of B go by sub-blocks of ns columns (kc x ns, kept
	// in L2), each swept by every micro-panel of A.
	qstep := max(1, kn.ns/nr)
	for qq := q0; qq < q1; qq += qstep {
		if c.privateB {
			p.packB(ws.subB, pc, kc, jc+qq*nr, nc-qq*nr, nr, 0, min(q1, qq+qstep)-qq)
		}
		for ir := 0; ir < mc; ir += mr {
			mrb := min(mr, mc-ir)
			direct := c.directA && mrb == mr
			var a *float32
			switch {
			case direct:
				a = &p.a[(ic+ir)*p.lda+pc]
			case c.directA:
				a = &pa[0] // the partial panel, packed alone
			default:
				a = &pa[ir*kc]
			}
			for q := qq; q < min(q1, qq+qstep); q++ {
				var b *float32
				var ldb int
				if c.privateB {
					b, ldb = &ws.subB[(q-qq)*nr*kc], nr
				} else {
					b, ldb = c.panelB(bp, jc, nc, pc, kc, q)
				}
				full := (q+1)*nr <= nc
				switch {
				case mrb == mr && full && direct:
					kn.microDirectA(kc, a, b, &cm[(ic+ir)*ldc+jc+q*nr], p.lda, ldb, ldc, beta)
					continue
				case mrb == mr && full:
					kn.micro(kc, a, b, &cm[(ic+ir)*ldc+jc+q*nr], ldb, ldc, beta)
					continue
				case mrb < mr && full && kn.short != nil:
					kn.short[mrb](kc, a, b, &cm[(ic+ir)*ldc+jc+q*nr], ldb, ldc, beta)
					continue
				}
				// Edge tile: compute it whole into the scratch tile, merge the valid part.
				switch {
				case direct:
					kn.microDirectA(kc, a, b, &ws.tile[0], p.lda, ldb, nr, 0)
				case mrb < mr && kn.short != nil:
					kn.short[mrb](kc, a, b, &ws.tile[0], ldb, nr, 0)
				default:
					kn.micro(kc, a, b, &ws.tile[0], ldb, nr, 0)
				}
				off := (ic+ir)*ldc + jc + q*nr
				nrb := min(nr, nc-q*nr)
				for i := 0; i < mrb; i++ {
					dst := cm[off+i*ldc : off+i*ldc+nrb]
					src := ws.tile[i*nr : i*nr+nrb]
					if beta == 0 {
						copy(dst, src)
						continue
					}
					for j := range dst {
						dst[j] = src[j] + beta*dst[j]
					}
				}
			}
		}
	}
}

// panelB returns micro-panel q of the kc x nc block of op(B) at (pc, jc)
// and its row stride: in the packed buffer bp, or in B itself when the call
// reads B in place (directB) and the panel is whole.
func (c *call) panelB(bp []float32, jc, nc, pc, kc, q int) (*float32, int) {
	nr := c.k.nr
	switch {
	case !c.directB:
		return &bp[q*nr*kc], nr
	case (q+1)*nr <= nc:
		return &c.p.b[pc*c.p.ldb+jc+q*nr], c.p.ldb
	default:
		return &bp[0], nr // the partial panel, packed alone
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

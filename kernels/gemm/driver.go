package gemm

import "runtime"

// minParallelFlops is the size (2*m*n*k) below which Sgemm stays on the
// caller's goroutine: waking other threads costs more than it saves.
const minParallelFlops = 2 * 128 * 128 * 128

// sgemm runs p with kernel kn.
func sgemm(kn *kernel, p problem) {
	p.check()
	if p.m == 0 || p.n == 0 {
		return
	}
	if p.k == 0 || p.alpha == 0 {
		p.scaleC()
		return
	}
	threads := 1
	if 2*float64(p.m)*float64(p.n)*float64(p.k) >= minParallelFlops {
		threads = runtime.GOMAXPROCS(0)
	}
	c := getCall(kn, &p, threads)
	if c.threads > 1 {
		c.wg.Add(c.threads - 1)
		for t := 1; t < c.threads; t++ {
			dispatch(share{c, t})
		}
	}
	c.run(0)
	if c.threads > 1 {
		c.wg.Wait()
	}
	putCall(c)
}

// run executes share t of the call: its part of the packing of B, then its
// rows (or columns) of C.
func (c *call) run(t int) {
	p, kn := &c.p, c.k
	mr, nr := kn.mr, kn.nr
	ws := c.ws[t]
	// The rows or micro-panel columns of C this share computes.
	r0, r1 := 0, p.m
	if c.splitM {
		panels := ceilDiv(p.m, mr)
		r0 = min(p.m, panels*t/c.threads*mr)
		r1 = min(p.m, panels*(t+1)/c.threads*mr)
	}
	buf := 0
	for jc := 0; jc < p.n; jc += kn.nc {
		nc := min(kn.nc, p.n-jc)
		panels := ceilDiv(nc, nr)
		q0, q1 := 0, panels
		if !c.splitM {
			q0, q1 = panels*t/c.threads, panels*(t+1)/c.threads
		}
		for pc := 0; pc < p.k; pc += kn.kc {
			kc := min(kn.kc, p.k-pc)
			bp := c.packB[buf]
			if c.threads > 1 {
				buf ^= 1 // double buffer: one barrier per block suffices
			}
			// Every share packs its slice of the B block, then waits for the others.
			packB(bp, p.b, p.ldb, p.transB, pc, kc, jc, nc, nr, panels*t/c.threads, panels*(t+1)/c.threads, p.alpha)
			c.bar.wait()
			beta := p.beta
			if pc > 0 {
				beta = 1
			}
			for ic := r0; ic < r1; ic += kn.mc {
				mc := min(kn.mc, r1-ic)
				packA(ws.packA, p.a, p.lda, p.transA, ic, mc, pc, kc, mr)
				c.macro(ws, bp, ic, mc, jc, nc, kc, q0, q1, beta)
			}
		}
	}
}

// macro multiplies the packed mc x kc block of A by the micro-panels
// q0 <= q < q1 of the packed kc x nc block of B into C[ic:ic+mc, jc:jc+nc].
func (c *call) macro(ws *workspace, bp []float32, ic, mc, jc, nc, kc, q0, q1 int, beta float32) {
	kn, p := c.k, &c.p
	mr, nr := kn.mr, kn.nr
	cm, ldc := p.c, p.ldc
	for q := q0; q < q1; q++ {
		nrb := min(nr, nc-q*nr)
		b := &bp[q*nr*kc]
		for ir := 0; ir < mc; ir += mr {
			mrb := min(mr, mc-ir)
			a := &ws.packA[ir*kc]
			off := (ic+ir)*ldc + jc + q*nr
			if mrb == mr && nrb == nr {
				kn.micro(kc, a, b, &cm[off], ldc, beta)
				continue
			}
			// Edge tile: compute it whole into the scratch tile, merge the valid part.
			kn.micro(kc, a, b, &ws.tile[0], nr, 0)
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

func ceilDiv(a, b int) int { return (a + b - 1) / b }

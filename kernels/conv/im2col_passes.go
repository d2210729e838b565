package conv

import (
	"github.com/duel-ssl/duel/kernels/gemm"

	"github.com/duel-ssl/duel/kernels/vecmath"
)

// The GEMM paths (Im2colForward, Im2colWeightGrad, Im2colInputGrad):
// im2col (or, for a 1x1 stride-1 convolution of
// a channel-major input, the input itself) times the weight, chunk by
// chunk of images over the goroutines (coarse.go).

// gemmForward writes the convolution of xd (layout g.xcm) with the weight
// wd into yd (channel-major).
func gemmForward(sc Scratch, g geom, wd, xd, yd []float32) {
	if g.empty() {
		clear(yd)
		return
	}
	if g.pairedBF16() {
		pairedForward(sc, g, wd, xd, yd)
		return
	}
	n, ohw := g.n, g.ohw()
	ldy := n * ohw
	if g.pointwise() && g.xcm {
		chunk, threads, sg, par := coarsePlan(n, n, g.flops())
		sg = g.gemm(sg, par)
		runChunks(n, chunk, threads, false, func(_, n0, cnt int) {
			sg(false, false, g.cout, cnt*ohw, g.cin, 1, wd, g.cin, xd[n0*ohw:], ldy, 0, yd[n0*ohw:], ldy)
		})
		return
	}
	ckk := g.ckk()
	chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
	sg = g.gemm(sg, par)
	if g.implicitPatches(g.cout) {
		tabs, sgs := g.patchTables(), sourceGemm(par)
		runChunks(n, chunk, threads, false, func(_, n0, cnt int) {
			src := &patchSource{g: g, x: xd, n0: n0, cnt: cnt, tabs: tabs}
			sgs(g.cout, cnt*ohw, ckk, wd, ckk, src, 0, yd[n0*ohw:], ldy)
		})
		return
	}
	cols := scratchSet(sc, threads, ckk*chunk*ohw)
	defer putScratchSet(sc, cols)
	runChunks(n, chunk, threads, false, func(w, n0, cnt int) {
		g.im2colImages(cols[w], xd, n0, cnt, par)
		sg(false, false, g.cout, cnt*ohw, ckk, 1, wd, ckk, cols[w], cnt*ohw, 0, yd[n0*ohw:], ldy)
	})
}

// gemmWeightGrad writes (adds, when acc) the weight gradient dw of the
// convolution of xd (layout g.xcm) from dy (channel-major).
func gemmWeightGrad(sc Scratch, g geom, xd, dy, dw []float32, acc bool) {
	if g.empty() {
		if !acc {
			clear(dw)
		}
		return
	}
	if g.pairedBF16() {
		pairedWeightGrad(sc, g, xd, dy, dw, acc)
		return
	}
	n, ohw := g.n, g.ohw()
	ldy := n * ohw
	if g.pointwise() && g.xcm {
		chunk, threads, sg, par := coarsePlan(n, n, g.flops())
		sg = g.gemm(sg, par)
		weightGrad(sc, g.cout, dw, acc, sumInPlace, n, chunk, threads, func(w, n0, cnt int, dst []float32, b float32) {
			sg(false, true, g.cout, g.cin, cnt*ohw, 1, dy[n0*ohw:], ldy, xd[n0*ohw:], ldy, b, dst, g.cin)
		})
		return
	}
	ckk := g.ckk()
	chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
	sg = g.gemm(sg, par)
	sum := sumInPlace
	if g.transposedWeightGrad() {
		sum = sumTransposed
	}
	if g.implicitPatchesT(g.cout) {
		// The gathered operand is col^T: where the stored one is
		// multiplied transposed, the private sums keep its bits.
		masks, sgs := g.patchTablesT(), sourceGemm(par)
		if sum == sumTransposed {
			sum = sumPrivate
		}
		weightGrad(sc, g.cout, dw, acc, sum, n, chunk, threads, func(_, n0, cnt int, dst []float32, b float32) {
			src := &patchSourceT{g: g, x: xd, n0: n0, cnt: cnt, masks: masks}
			sgs(g.cout, ckk, cnt*ohw, dy[n0*ohw:], ldy, src, b, dst, ckk)
		})
		return
	}
	cols := scratchSet(sc, threads, ckk*chunk*ohw)
	defer putScratchSet(sc, cols)
	weightGrad(sc, g.cout, dw, acc, sum, n, chunk, threads, func(w, n0, cnt int, dst []float32, b float32) {
		ld := cnt * ohw
		g.im2colImages(cols[w], xd, n0, cnt, par)
		if sum == sumTransposed {
			sg(false, true, ckk, g.cout, ld, 1, cols[w], ld, dy[n0*ohw:], ldy, b, dst, g.cout)
			return
		}
		sg(false, true, g.cout, ckk, ld, 1, dy[n0*ohw:], ldy, cols[w], ld, b, dst, ckk)
	})
}

// gemmInputGrad writes (adds, when acc) the input gradient dx (layout
// g.xcm) of the convolution from dy (channel-major): the transposed GEMM
// for a 1x1 stride-1 convolution, a transposed convolution for other
// stride-1 ones, else GEMM + col2im.
func gemmInputGrad(sc Scratch, g geom, wd, dy, dx []float32, acc bool) {
	if g.empty() {
		if !acc {
			clear(dx)
		}
		return
	}
	n, ohw := g.n, g.ohw()
	ldy := n * ohw
	if g.pointwise() && g.xcm {
		chunk, threads, sg, par := coarsePlan(n, n, g.flops())
		sg = g.gemm(sg, par)
		runChunks(n, chunk, threads, false, func(_, n0, cnt int) {
			sg(true, false, g.cin, cnt*ohw, g.cout, 1, wd, g.cin, dy[n0*ohw:], ldy, beta(acc), dx[n0*ohw:], ldy)
		})
		return
	}
	if g.s == 1 && g.xcm && 2*g.p <= g.k-1 {
		inputGradTransposed(sc, g, wd, dy, dx, acc)
		return
	}
	sub := g.subsample()
	if !acc && !sub {
		clear(dx)
	}
	ckk := g.ckk()
	chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
	sg = g.gemm(sg, par)
	dcols := scratchSet(sc, threads, ckk*chunk*ohw)
	defer putScratchSet(sc, dcols)
	runChunks(n, chunk, threads, false, func(w, n0, cnt int) {
		ld := cnt * ohw
		sg(true, false, ckk, ld, g.cout, 1, wd, ckk, dy[n0*ohw:], ldy, 0, dcols[w], ld)
		if sub {
			g.upsampleImages(dx, dcols[w], n0, cnt, par, acc)
			return
		}
		g.col2imImages(dx, dcols[w], n0, cnt, par)
	})
}

// empty reports whether g has no image, channel or output position: its
// sums are all empty (zero), and its GEMMs would have zero strides.
func (g geom) empty() bool {
	return g.n == 0 || g.cin == 0 || g.cout == 0 || g.ohw() == 0 || g.h*g.w == 0
}

// subsample reports whether g is a 1x1 stride-2 unpadded convolution of
// even maps (a ResNet's downsampling shortcut): its patch matrix is the
// even rows and columns of the input.
func (g geom) subsample() bool {
	return g.k == 1 && g.s == 2 && g.p == 0 && g.h%2 == 0 && g.w%2 == 0
}

// upsampleImages writes (adds, when acc) the patch-matrix gradient dcol of
// images [n0, n0+cnt) of a subsampling convolution into dx: the even rows
// and columns of each plane get dcol, the others zero. Storing writes every
// element of dx once instead of clearing it and then adding (col2im).
func (g geom) upsampleImages(dx, dcol []float32, n0, cnt int, par, acc bool) {
	ld := cnt * g.ohw()
	w := 1
	if par {
		w = workers(g.cin * ld)
	}
	zeros := make([]float32, g.ow)
	parallelFor(cnt*g.cin, w, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			j, ci := t/g.cin, t%g.cin
			off, cs := g.image(n0 + j)
			img := dx[off+ci*cs:][:g.h*g.w]
			src := dcol[ci*ld+j*g.ohw():][:g.ohw()]
			for oi := range g.oh {
				even := img[2*oi*g.w:][:g.w]
				s := src[oi*g.ow:][:g.ow]
				if acc {
					vecmath.ZipAdd(even, s, zeros)
					continue
				}
				vecmath.Zip(even, s, zeros)
				clear(img[(2*oi+1)*g.w:][:g.w])
			}
		}
	})
}

// inputGradTransposed computes the input gradient of a stride-1 convolution
// as the convolution of dy with the flipped, transposed kernel and padding
// k-1-p: one GEMM per chunk of images into dx (channel-major), with no
// scatter-add.
func inputGradTransposed(sc Scratch, g geom, wd, dy, dx []float32, acc bool) {
	k := g.k
	kk := k * k
	tg := geom{n: g.n, cin: g.cout, h: g.oh, w: g.ow, cout: g.cin, k: k, s: 1, p: k - 1 - g.p, oh: g.h, ow: g.w, xcm: true, bf16: g.bf16, pairing: g.pairing}
	if tg.pairedBF16() {
		a2 := get(sc, g.cin*((g.cout+1)/2)*kk)
		defer put(sc, a2)
		pairWeightsFlipped(a2, wd, g.cout, g.cin, kk)
		pairedConv(sc, tg, a2, dy, dx, beta(acc))
		return
	}
	// wt[ci][co][a][b] = w[co][ci][k-1-a][k-1-b]: an (In x Out*K*K) matrix.
	wt := get(sc, g.cin*g.cout*kk)
	defer put(sc, wt)
	for co := range g.cout {
		for ci := range g.cin {
			src := wd[(co*g.cin+ci)*kk:][:kk]
			dst := wt[(ci*g.cout+co)*kk:][:kk]
			for j := range kk {
				dst[j] = src[kk-1-j]
			}
		}
	}
	// The transposed convolution maps (Out, OH, OW) back to (In, H, W): tg.
	ckk, hw, ld := tg.ckk(), g.h*g.w, g.n*g.h*g.w
	chunk, threads, sg, par := coarsePlan(g.n, tg.chunk(), tg.flops())
	sg = tg.gemm(sg, par)
	if tg.implicitPatches(g.cin) {
		tabs, sgs := tg.patchTables(), sourceGemm(par)
		runChunks(g.n, chunk, threads, false, func(_, n0, cnt int) {
			src := &patchSource{g: tg, x: dy, n0: n0, cnt: cnt, tabs: tabs}
			sgs(g.cin, cnt*hw, ckk, wt, ckk, src, beta(acc), dx[n0*hw:], ld)
		})
		return
	}
	cols := scratchSet(sc, threads, ckk*chunk*hw)
	defer putScratchSet(sc, cols)
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		tg.im2colImages(cols[w], dy, n0, cnt, par)
		sg(false, false, g.cin, cnt*hw, ckk, 1, wt, ckk, cols[w], cnt*hw, beta(acc), dx[n0*hw:], ld)
	})
}

// transposedWeightGrad reports whether the weight gradient is computed
// transposed, dW^T (In*K*K x Out) = col * dy^T, which reads the patch matrix
// as the A operand instead of transposing it into packed B panels (faster
// on one thread on ResNet's layers). The transposed result is added into
// dW at the end, which pays only when the batch has many output positions
// per weight, and the 32-wide tile wants a multiple of 32 output channels.
func (g geom) transposedWeightGrad() bool {
	return g.cout%32 == 0 && g.n*g.ohw() >= 4096
}

// partSum is how weightGrad sums the goroutines' gradients.
type partSum int

const (
	// sumInPlace: goroutine 0 accumulates into dw itself, the others into
	// private buffers that are added to dw at the end.
	sumInPlace partSum = iota
	// sumPrivate: every goroutine accumulates into a private buffer from
	// zero; the buffers are added to dw in order at the end.
	sumPrivate
	// sumTransposed is sumPrivate with buffers holding the transposed
	// gradient (In*K*K x Out).
	sumTransposed
)

// weightGrad accumulates the weight gradient over the chunks of the batch
// into dw (added to it when acc): gemmChunk(w, n0, cnt, dst, beta) runs
// goroutine w's GEMM of images [n0, n0+cnt) into dst with the given beta,
// and the goroutines' sums are added as sum says. The chunks are assigned
// statically, so the sums do not depend on timing. sumPrivate gives the
// bits of sumTransposed: each element is the same additions in the same
// order.
func weightGrad(sc Scratch, out int, dw []float32, acc bool, sum partSum, n, chunk, threads int, gemmChunk func(w, n0, cnt int, dst []float32, b float32)) {
	parts := make([][]float32, threads)
	used := make([]bool, threads)
	for w := range parts {
		if w == 0 && sum == sumInPlace {
			parts[0], used[0] = dw, acc
			continue
		}
		parts[w] = get(sc, len(dw))
	}
	runChunks(n, chunk, threads, true, func(w, n0, cnt int) {
		gemmChunk(w, n0, cnt, parts[w], beta(used[w]))
		used[w] = true
	})
	// The parts are added in goroutine order, each element on its own:
	// split over the cores by ranges of dw (rows of dw when transposed),
	// the sums are the same.
	if sum != sumInPlace {
		cols := len(dw) / out
		parallelFor(out, workers(len(dw)*threads), func(lo, hi int) {
			rows := dw[lo*cols : hi*cols]
			first := !acc
			for w, part := range parts {
				if !used[w] {
					continue
				}
				if sum == sumTransposed {
					addTransposedRows(dw, part, out, cols, lo, hi, first)
				} else {
					addPart(rows, part[lo*cols:hi*cols], first)
				}
				first = false
			}
			if first {
				clear(rows)
			}
		})
		for _, part := range parts {
			put(sc, part)
		}
		return
	}
	parallelFor(len(dw), workers(len(dw)*threads), func(lo, hi int) {
		if !used[0] {
			clear(dw[lo:hi])
		}
		for w := 1; w < threads; w++ {
			if used[w] {
				gemm.Saxpy(1, parts[w][lo:hi], dw[lo:hi])
			}
		}
	})
	for w := 1; w < threads; w++ {
		put(sc, parts[w])
	}
}

// addPart adds src into dst (copies it when overwrite), element by
// element as addTransposedRows does.
func addPart(dst, src []float32, overwrite bool) {
	if overwrite {
		copy(dst, src)
		return
	}
	for i, v := range src[:len(dst)] {
		dst[i] += v
	}
}

// addTransposedRows adds src^T (src is cols x rows) into the rows [lo,
// hi) of dst (rows x cols), or stores it there when overwrite, in 32 x 32
// blocks.
func addTransposedRows(dst, src []float32, rows, cols, lo, hi int, overwrite bool) {
	const blk = 32
	for i0 := lo; i0 < hi; i0 += blk {
		for j0 := 0; j0 < cols; j0 += blk {
			for i := i0; i < min(i0+blk, hi); i++ {
				d := dst[i*cols : (i+1)*cols]
				for j := j0; j < min(j0+blk, cols); j++ {
					if overwrite {
						d[j] = src[j*rows+i]
					} else {
						d[j] += src[j*rows+i]
					}
				}
			}
		}
	}
}

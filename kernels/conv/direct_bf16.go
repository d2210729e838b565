package conv

import "github.com/duel-ssl/duel/kernels/gemm"

// The direct path in bfloat16 (DirectBF16): the direct kernels over word
// planes, each 32-bit word the bfloat16 pair of two planes, with
// VDPBF16PS in place of the FMA (kernel_bf16_amd64.s). The forward pass
// and the input gradient pair the channels they sum over (the input's,
// the output gradient's) and the packed filter pairs the same channels
// (PackFilterBF16); the weight gradient, which sums over positions, pairs
// the batch's images, of the input and of the output gradient alike. The
// words are only copied between the pairing and the kernels (the phase
// planes at stride 2 too), so the products are those of the rounded
// factors, summed in float32; the drivers are those of the float32 direct
// path (direct.go), over runs of images whose words fit half the L2 cache.

// directRunBF16 returns how many images of the input a kernel call covers:
// those whose word planes (half the channels) fit ChunkPositions.
func (g geom) directRunBF16() int {
	return max(1, min(g.n, ChunkPositions((g.cin+1)/2)/(g.h*g.w)))
}

// pairPlanes writes the word planes of channel pairs (2c, 2c+1) of cnt
// images of channel-major planes src (channels of them, ld apart, the run
// starting ps*i0 into each): plane c at dst[c*cnt*ps:], a missing last
// channel paired with zeros.
func pairPlanes(dst, src []float32, ld, channels, i0, cnt, ps int) {
	n := cnt * ps
	for c := range (channels + 1) / 2 {
		r0 := src[2*c*ld+i0*ps:][:n]
		var r1 []float32
		if 2*c+1 < channels {
			r1 = src[(2*c+1)*ld+i0*ps:][:n]
		}
		gemm.PairPlanes(dst[c*n:][:n], r0, r1)
	}
}

// directForwardBF16 writes the convolution of xd (layout g.xcm) with the
// (Out, In, 3, 3) weight wd into yd (channel-major) in bfloat16.
func directForwardBF16(sc Scratch, g geom, pl *Plan, wd, xd, yd []float32) {
	buf := get(sc, FilterLenBF16(g.cout, g.cin))
	defer put(sc, buf)
	f := packFilterBF16(sc, buf, wd, g.cout, g.cin, false)
	chunk, threads := g.directThreads()
	run, cp, hw, ohw := g.directRunBF16(), (g.cin+1)/2, g.h*g.w, g.ohw()
	words := scratchSet(sc, threads, cp*run*hw)
	defer putScratchSet(sc, words)
	var phases [][]float32
	if g.s == 2 {
		phases = scratchSet(sc, threads, PhasesLen(pl, cp, run))
		defer putScratchSet(sc, phases)
	}
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		runs(n0, cnt, run, func(i, m int) {
			g.pairChannels(words[w], xd, i, m, false)
			x, ldx := words[w], m*hw
			if g.s == 2 {
				Phases(pl, phases[w], x, ldx, cp, m)
				x, ldx = phases[w], PhasesLen(pl, 1, m)
			}
			Forward(pl, &f, yd[i*ohw:], g.n*ohw, x, ldx, m, false)
		})
	})
}

// directInputGradBF16 writes (adds, when acc) the input gradient dx
// (layout g.xcm) of the convolution from the output gradient dy
// (channel-major) in bfloat16: the flipped kernel's convolution of dy's
// channel pairs at stride 1, InputGrad's four phases at stride 2.
func directInputGradBF16(sc Scratch, g geom, pl *Plan, wd, dy, dx []float32, acc bool) {
	var f Filter
	var fs InputGradFilters
	var buf []float32
	if g.s == 1 {
		buf = get(sc, FilterLenBF16(g.cin, g.cout))
		f = packFilterBF16(sc, buf, wd, g.cout, g.cin, true)
	} else {
		buf = get(sc, InputGradFiltersLenBF16(g.cout, g.cin))
		fs = packInputGradFiltersBF16(sc, pl, buf, wd, g.cout, g.cin)
	}
	defer put(sc, buf)
	chunk, threads := g.directThreads()
	hw, ohw, cp := g.h*g.w, g.ohw(), (g.cout+1)/2
	// Runs whose output-gradient words fit as the input's words do.
	run := max(1, min(g.n, ChunkPositions(cp)/ohw))
	words := scratchSet(sc, threads, cp*run*ohw)
	defer putScratchSet(sc, words)
	var grads, phases [][]float32
	if !g.xcm {
		grads = scratchSet(sc, threads, g.cin*run*hw)
		defer putScratchSet(sc, grads)
	}
	if g.s == 2 {
		phases = scratchSet(sc, threads, PhasesLen(pl, g.cin, run))
		defer putScratchSet(sc, phases)
	}
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		runs(n0, cnt, run, func(i, m int) {
			pairPlanes(words[w], dy, g.n*ohw, g.cout, i, m, ohw)
			d, ld, a := dx[i*hw:], g.n*hw, acc
			if !g.xcm {
				d, ld, a = grads[w], m*hw, false
			}
			if g.s == 1 {
				Forward(pl, &f, d, ld, words[w], m*ohw, m, a)
			} else {
				InputGrad(pl, &fs, d, ld, words[w], m*ohw, phases[w], m, a)
			}
			if !g.xcm {
				addImages(dx, d, g, i, m, acc)
			}
		})
	})
}

// directWeightGradBF16 writes (adds, when acc) the weight gradient dw of
// the convolution of xd (layout g.xcm) from dy (channel-major) in
// bfloat16, over pairs of images.
func directWeightGradBF16(sc Scratch, g geom, pl *Plan, xd, dy, dw []float32, acc bool) {
	// Chunks and runs of an even number of images (but for the batch's
	// last), so that no image pairs with zeros that could pair with an
	// image: the sums do not depend on the chunking but through its order.
	run := g.directRunBF16()
	run += run % 2
	chunk, threads, _, _ := coarsePlan(g.n, run, g.flops())
	if chunk%2 == 1 && chunk < g.n {
		chunk++
		threads = min(threads, (g.n+chunk-1)/chunk)
	}
	hw, ohw := g.h*g.w, g.ohw()
	pairs := (run + 1) / 2
	xs := scratchSet(sc, threads, g.cin*pairs*hw)
	defer putScratchSet(sc, xs)
	dys := scratchSet(sc, threads, g.cout*pairs*ohw)
	defer putScratchSet(sc, dys)
	var phases [][]float32
	if g.s == 2 {
		phases = scratchSet(sc, threads, PhasesLen(pl, g.cin, pairs))
		defer putScratchSet(sc, phases)
	}
	dyImage := func(i int) (off, cs int) { return i * ohw, g.n * ohw }
	weightGrad(sc, g.cout, dw, acc, sumInPlace, g.n, chunk, threads, func(w, n0, cnt int, dst []float32, b float32) {
		runs(n0, cnt, run, func(i, m int) {
			mp := (m + 1) / 2
			pairImages(xs[w], mp*hw, xd, g.cin, hw, i, m, g.image, false)
			pairImages(dys[w], mp*ohw, dy, g.cout, ohw, i, m, dyImage, false)
			x, ldx := xs[w], mp*hw
			if g.s == 2 {
				Phases(pl, phases[w], x, ldx, g.cin, mp)
				x, ldx = phases[w], PhasesLen(pl, 1, mp)
			}
			WeightGradBF16(pl, dst, dys[w], mp*ohw, x, ldx, g.cout, g.cin, mp, b != 0 || i > n0)
		})
	})
}

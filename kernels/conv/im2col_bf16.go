package conv

import (
	"math"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// The GEMM paths in bfloat16 without a float32 patch matrix. A GEMM may
// sum its k in any order, as long as both factors use it, and a
// bfloat16 pair (one 32-bit word, gemm.PairPlanes) can join any two k.
// So instead of writing the float32 patch matrix and pairing its rows:
//
//   - the forward pass pairs the input's channels (2c, 2c+1) into word
//     planes, im2col lays out the word planes as it lays out floats (it
//     only copies and zeroes), and the weight pairs the same channels:
//     k runs over (channel pair, tap), half of the patch matrix's rows;
//   - the weight gradient pairs the batch's images (2i, 2i+1), of the
//     input and of the output gradient alike: k runs over (image pair,
//     position), and im2col lays out the words of image pairs.
//
// The input is read and rounded once (1/9 of a 3x3 patch matrix), and
// im2col moves half as many 32-bit words as the float32 path. Words are
// only ever copied between the pairing and the GEMM, so their bits are
// the rounded values'. gemm.SgemmPairedBF16 multiplies them (on
// AVX512_BF16; elsewhere it unpacks the words, which is why the paired
// paths run only where gemm.NativeBF16 holds: see pairedBF16).

// pairedBF16 reports whether g's GEMM paths in bfloat16 take the paired
// form: with the CPU's bfloat16 instructions, for a convolution that
// needs a patch matrix (not a 1x1 stride-1 one of a channel-major input,
// whose operands SgemmBF16 pairs itself).
func (g geom) pairedBF16() bool {
	if !g.bf16 || g.pointwise() && g.xcm {
		return false
	}
	switch g.pairing {
	case pairAlways:
		return true
	case pairNever:
		return false
	}
	return gemm.NativeBF16()
}

// pairedFunc is the signature of gemm.SgemmPairedBF16 and its serial form.
type pairedFunc func(transA, transB bool, m, n, k2 int, a2 []float32, lda2 int, b2 []float32, ldb2 int, beta float32, c []float32, ldc int)

// pairedGemm returns the paired product coarsePlan's choice par stands
// for: threaded when par (as coarsePlan's Sgemm), else serial.
func pairedGemm(par bool) pairedFunc {
	if par {
		return gemm.SgemmPairedBF16
	}
	return gemm.SgemmPairedBF16Serial
}

// pairWeights writes the (out, in, kk) weight w as out rows of
// ceil(in/2)*kk words, word c*kk+t the bfloat16 pair of channels 2c and
// 2c+1 under tap t (zero for a missing last channel): the A of
// pairedForward.
func pairWeights(dst, w []float32, out, in, kk int) {
	cp := (in + 1) / 2
	parallelFor(out, workers(out*in*kk), func(lo, hi int) {
		for co := lo; co < hi; co++ {
			src := w[co*in*kk : (co+1)*in*kk]
			row := dst[co*cp*kk : (co+1)*cp*kk]
			if in >= 2 {
				gemm.PairRuns(row, kk, src, src[kk:], 2*kk, in/2, kk, false)
			}
			if in%2 == 1 {
				gemm.PairPlanes(row[(cp-1)*kk:], src[(in-1)*kk:], nil)
			}
		}
	})
}

// pairWeightsFlipped writes the A of pairedForward for the transposed
// convolution of inputGradTransposed: the (out, in, kk) weight w flipped
// and transposed, in rows of ceil(out/2)*kk words, word c*kk+t of row ci
// the pair of w[2c][ci][kk-1-t] and w[2c+1][ci][kk-1-t].
func pairWeightsFlipped(dst, w []float32, out, in, kk int) {
	cp := (out + 1) / 2
	parallelFor(in, workers(out*in*kk), func(lo, hi int) {
		for ci := lo; ci < hi; ci++ {
			row := dst[ci*cp*kk : (ci+1)*cp*kk]
			if out >= 2 {
				gemm.PairRuns(row, kk, w[ci*kk:], w[(in+ci)*kk:], 2*in*kk, out/2, kk, true)
			}
			if out%2 == 1 {
				last := w[((out-1)*in+ci)*kk:][:kk]
				d := row[(cp-1)*kk:][:kk]
				for t := range d {
					d[t] = math.Float32frombits(uint32(math.Float32bits(gemm.RoundBF16(last[kk-1-t])) >> 16))
				}
			}
		}
	})
}

// pairChannels writes images [n0, n0+cnt) of xd (layout g.xcm) as
// ceil(cin/2) channel-major word planes: plane c, image j at
// dst[(c*cnt+j)*hw:], the pairs of channels 2c and 2c+1.
func (g geom) pairChannels(dst, xd []float32, n0, cnt int, par bool) {
	hw, cp := g.h*g.w, (g.cin+1)/2
	w := 1
	if par {
		w = workers(cp * cnt * hw)
	}
	if g.xcm {
		// The images of a channel are contiguous: one pairing a plane pair.
		cs := g.n * hw
		parallelFor(cp, w, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				r0 := xd[2*c*cs+n0*hw:][:cnt*hw]
				var r1 []float32
				if 2*c+1 < g.cin {
					r1 = xd[(2*c+1)*cs+n0*hw:][:cnt*hw]
				}
				gemm.PairPlanes(dst[c*cnt*hw:][:cnt*hw], r0, r1)
			}
		})
		return
	}
	parallelFor(cp*cnt, w, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			c, j := t/cnt, t%cnt
			off, cs := g.image(n0 + j)
			r0 := xd[off+2*c*cs:][:hw]
			var r1 []float32
			if 2*c+1 < g.cin {
				r1 = xd[off+(2*c+1)*cs:][:hw]
			}
			gemm.PairPlanes(dst[(c*cnt+j)*hw:][:hw], r0, r1)
		}
	})
}

// pairImages writes images [n0, n0+cnt) of the planes src (planes channels
// of plane size ps: channel ci of image n at off(n)+ci*cs) as
// channel-major word planes of ceil(cnt/2) image pairs, channels ld words
// apart: channel ci, pair i at dst[ci*ld+i*ps:], images n0+2i and n0+2i+1
// (zero for a missing last image).
func pairImages(dst []float32, ld int, src []float32, channels, ps, n0, cnt int, image func(n int) (off, cs int), par bool) {
	pairs := (cnt + 1) / 2
	w := 1
	if par {
		w = workers(channels * pairs * ps)
	}
	parallelFor(channels*pairs, w, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			ci, i := t/pairs, t%pairs
			o0, cs := image(n0 + 2*i)
			r0 := src[o0+ci*cs:][:ps]
			var r1 []float32
			if 2*i+1 < cnt {
				o1, _ := image(n0 + 2*i + 1)
				r1 = src[o1+ci*cs:][:ps]
			}
			gemm.PairPlanes(dst[ci*ld+i*ps:][:ps], r0, r1)
		}
	})
}

// wordGeom is g's geometry over cnt word images of channels channels,
// channel-major: im2col on it lays out words as it does floats (it is not
// bf16: it only copies words already rounded).
func (g geom) wordGeom(cnt, channels int) geom {
	return geom{n: cnt, cin: channels, h: g.h, w: g.w, cout: g.cout, k: g.k, s: g.s, p: g.p, oh: g.oh, ow: g.ow, xcm: true}
}

// pairedForward writes the convolution of xd with the weight wd into yd
// (channel-major) through channel pairs (pairedBF16).
func pairedForward(sc Scratch, g geom, wd, xd, yd []float32) {
	kk := g.k * g.k
	a2 := get(sc, g.cout*((g.cin+1)/2)*kk)
	defer put(sc, a2)
	pairWeights(a2, wd, g.cout, g.cin, kk)
	pairedConv(sc, g, a2, xd, yd, 0)
}

// pairedConv writes the convolution of xd with the paired weight a2
// (pairWeights' layout) into yd: yd = conv + beta*yd, channel-major.
func pairedConv(sc Scratch, g geom, a2, xd, yd []float32, beta float32) {
	n, ohw, hw, kk := g.n, g.ohw(), g.h*g.w, g.k*g.k
	cp := (g.cin + 1) / 2
	k2 := cp * kk
	ldy := n * ohw
	chunk, threads, _, par := coarsePlan(n, g.chunk(), g.flops())
	mm := pairedGemm(par)
	planes := scratchSet(sc, threads, cp*chunk*hw)
	defer putScratchSet(sc, planes)
	// A chunk's patch matrix has rows UncrowdedStride(cnt*ohw) <= cnt*ohw+16
	// apart, cnt <= chunk.
	cols := scratchSet(sc, threads, k2*(chunk*ohw+16))
	defer putScratchSet(sc, cols)
	runChunks(n, chunk, threads, false, func(w, n0, cnt int) {
		g.pairChannels(planes[w], xd, n0, cnt, par)
		ld := gemm.UncrowdedStride(cnt * ohw)
		g.wordGeom(cnt, cp).im2colImagesLd(cols[w], ld, planes[w], 0, cnt, par)
		mm(false, false, g.cout, cnt*ohw, k2, a2, max(1, k2), cols[w], max(1, ld), beta, yd[n0*ohw:], max(1, ldy))
	})
}

// pairedWeightGrad writes (adds, when acc) the weight gradient dw of the
// convolution of xd from dy (channel-major) through image pairs
// (pairedBF16).
func pairedWeightGrad(sc Scratch, g geom, xd, dy, dw []float32, acc bool) {
	n, ohw, hw, ckk := g.n, g.ohw(), g.h*g.w, g.ckk()
	// Chunks of an even number of images (but for the batch's last), so
	// that no image pairs with zeros that could pair with an image
	// (coarsePlan may halve an even chunk into an odd one).
	chunk, threads, _, par := coarsePlan(n, g.chunk()+g.chunk()%2, g.flops())
	if chunk%2 == 1 && chunk < n {
		chunk++
		threads = min(threads, (n+chunk-1)/chunk)
	}
	mm := pairedGemm(par)
	maxPairs := (chunk + 1) / 2
	xs := scratchSet(sc, threads, g.cin*maxPairs*hw)
	defer putScratchSet(sc, xs)
	// Rows UncrowdedStride(pairs*ohw) <= pairs*ohw+16 apart, pairs <= maxPairs.
	dys := scratchSet(sc, threads, g.cout*(maxPairs*ohw+16))
	defer putScratchSet(sc, dys)
	cols := scratchSet(sc, threads, ckk*(maxPairs*ohw+16))
	defer putScratchSet(sc, cols)
	dyImage := func(i int) (off, cs int) { return i * ohw, n * ohw }
	weightGrad(sc, g.cout, dw, acc, sumInPlace, n, chunk, threads, func(w, n0, cnt int, dst []float32, b float32) {
		pairs := (cnt + 1) / 2
		k2 := pairs * ohw
		ld := gemm.UncrowdedStride(k2)
		pairImages(xs[w], pairs*hw, xd, g.cin, hw, n0, cnt, g.image, par)
		pairImages(dys[w], ld, dy, g.cout, ohw, n0, cnt, dyImage, par)
		g.wordGeom(pairs, g.cin).im2colImagesLd(cols[w], ld, xs[w], 0, pairs, par)
		mm(false, true, g.cout, ckk, k2, dys[w], max(1, ld), cols[w], max(1, ld), b, dst, max(1, ckk))
	})
}

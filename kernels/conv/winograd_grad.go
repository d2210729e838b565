package conv

import (
	"runtime"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// The weight gradient of a Winograd convolution is the adjoint of its
// pipeline. With Y = A^T [U ⊙ V] A per tile and U = G g G^T,
//
//	dU[xi] (Out x In) = Σ_tiles dM[xi] (Out x tiles) · V[xi]^T,
//	dM = A dY A^T,  dg = G^T dU G,
//
// where dY is the 2x2 tile of the output gradient (zero past the edge of
// an odd map): 16 GEMMs with the transformed input tiles (computed again
// from the input), 2.25 times fewer flops than im2col's weight gradient.

// winoGradOutput writes the transformed output-gradient tiles A dY A^T of
// images [n0, n0+cnt) of dy (channel-major, geometry g: g.cout channels of
// g.oh x g.ow) into m: 16 matrices of g.cout x T, laid out as winoInput
// lays out its tiles. When par it splits itself over goroutines by
// (channel, image) pairs. buf is as for winoInput.
func (g geom) winoGradOutput(m, dy []float32, n0, cnt int, par bool, buf []float32) {
	th, tw := g.winoTiles()
	tpi := th * tw
	nt := cnt * tpi
	ld := winoLd(g.cout, nt)
	oh, ow := g.oh, g.ow
	ohw := oh * ow
	pw := 2 * tw
	even := oh%2 == 0 && ow%2 == 0
	w := 1
	if par {
		w = workers(16 * ld)
	}
	parallelFor(g.cout*cnt, w, func(lo, hi int) {
		// Two rows of the output gradient, zero-padded to an even width.
		b := workBuf(buf, 2*pw, w > 1)
		y0, y1 := b[:pw], b[pw:]
		clear(b) // the column past an odd width stays zero
		var ms [16][]float32
		for t := lo; t < hi; t++ {
			co, j := t/cnt, t%cnt
			src := dy[(co*g.n+n0+j)*ohw:][:ohw]
			for xi := range ms {
				ms[xi] = m[xi*ld+co*nt+j*tpi:][:tpi]
			}
			if even {
				// All rows are whole: read them in place.
				aTilesMap(&ms, src, th, tw)
				continue
			}
			for ty := range th {
				y := 2 * ty
				copy(y0, src[y*ow:(y+1)*ow])
				if y+1 < oh {
					copy(y1, src[(y+1)*ow:(y+2)*ow])
				} else {
					clear(y1)
				}
				k := ty * tw
				aTiles(&ms, k, tw, y0, y1)
			}
		}
	})
}

// aTiles writes A dY A^T of the 2x2 tiles (y0[2i:2i+2], y1[2i:2i+2]) of a
// tile row to ms[xi][k+i], i < n.
func aTiles(ms *[16][]float32, k, n int, y0, y1 []float32) {
	var d [16][]float32
	for xi := range d {
		d[xi] = ms[xi][k : k+n]
	}
	y0, y1 = y0[:2*n], y1[:2*n]
	for i := range n {
		a0, a1 := y0[2*i], y0[2*i+1]
		b0, b1 := y1[2*i], y1[2*i+1]
		p := [4]float32{a0, a0 + a1, a0 - a1, -a1}
		q := [4]float32{b0, b0 + b1, b0 - b1, -b1}
		for c := range 4 {
			d[c][i] = p[c]
			d[4+c][i] = p[c] + q[c]
			d[8+c][i] = p[c] - q[c]
			d[12+c][i] = -q[c]
		}
	}
}

// winoFilterGrad writes (adds, when acc) G^T du G of the transformed
// kernel gradients du (16 matrices of out x in, winoLd apart) into the
// (out, in, 3, 3) weight gradient dw.
func winoFilterGrad(dw, du []float32, out, in int, acc bool) {
	ld := winoLd(out, in)
	parallelFor(out, workers(16*ld), func(lo, hi int) {
		var rows [16][]float32
		for co := lo; co < hi; co++ {
			for xi := range rows {
				rows[xi] = du[xi*ld+co*in:][:in]
			}
			gtdgRow(dw[co*in*9:][:in*9], &rows, in, acc)
		}
	})
}

// winoWeightGrad writes (adds, when acc) the weight gradient of the
// Winograd convolution g of xd into dw, from the output gradient dy
// (channel-major). Like weightGrad it splits the batch statically over the
// goroutines, each accumulating the transformed gradient of its chunks in
// a private buffer; the buffers are summed in a fixed order, so the result
// does not depend on timing.
func winoWeightGrad(sc Scratch, g geom, xd, dy, dw []float32, acc bool) {
	if g.empty() { // as gemmWeightGrad
		if !acc {
			clear(dw[:g.cout*g.cin*9])
		}
		return
	}
	th, tw := g.winoTiles()
	tpi := th * tw
	uld := winoLd(g.cout, g.cin)
	if g.winoWhole() {
		nt := g.n * tpi
		vld, mld := winoLd(g.cin, nt), winoLd(g.cout, nt)
		v := get(sc, 16*vld)
		defer put(sc, v)
		m := get(sc, 16*mld)
		defer put(sc, m)
		du := get(sc, 16*uld)
		defer put(sc, du)
		g.winoInput(v, xd, 0, g.n, true, nil)
		g.winoGradOutput(m, dy, 0, g.n, true, nil)
		w := 1
		if g.winoFlops() >= minCoarseFlops {
			w = runtime.GOMAXPROCS(0)
		}
		parallelFor(16, w, func(lo, hi int) {
			for xi := lo; xi < hi; xi++ {
				g.gemm(gemm.SgemmSerial, false)(false, true, g.cout, g.cin, nt, 1, m[xi*mld:], nt, v[xi*vld:], nt, 0, du[xi*uld:], g.cin)
			}
		})
		winoFilterGrad(dw, du, g.cout, g.cin, acc)
		return
	}
	chunk, threads, sg, par := coarsePlan(g.n, g.winoChunk(), g.winoFlops())
	sg = g.gemm(sg, par)
	vs := scratchSet(sc, threads, 16*winoLd(g.cin, chunk*tpi))
	defer putScratchSet(sc, vs)
	ms := scratchSet(sc, threads, 16*winoLd(g.cout, chunk*tpi))
	defer putScratchSet(sc, ms)
	dus := scratchSet(sc, threads, 16*uld)
	defer putScratchSet(sc, dus)
	bufs := scratchSet(sc, threads, g.winoBufLen())
	defer putScratchSet(sc, bufs)
	used := make([]bool, threads)
	runChunks(g.n, chunk, threads, true, func(w, n0, cnt int) {
		nt := cnt * tpi
		v, m := vs[w], ms[w]
		vld, mld := winoLd(g.cin, nt), winoLd(g.cout, nt)
		g.winoInput(v, xd, n0, cnt, par, bufs[w])
		g.winoGradOutput(m, dy, n0, cnt, par, bufs[w])
		for xi := range 16 {
			sg(false, true, g.cout, g.cin, nt, 1, m[xi*mld:], nt, v[xi*vld:], nt, beta(used[w]), dus[w][xi*uld:], g.cin)
		}
		used[w] = true
	})
	for w := 1; w < threads; w++ {
		if used[w] {
			gemm.Saxpy(1, dus[w], dus[0])
		}
	}
	winoFilterGrad(dw, dus[0], g.cout, g.cin, acc)
}

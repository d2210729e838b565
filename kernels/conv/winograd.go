package conv

import (
	"runtime"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// Winograd F(2x2, 3x3) for the 3x3 stride-1 padding-1 convolutions of a
// ResNet (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015). The output is cut into 2x2 tiles; each tile is computed
// from a 4x4 input tile d and the 3x3 kernel g as
//
//	Y = A^T [(G g G^T) ⊙ (B^T d B)] A,
//
// so that, after the transforms, the convolution is 16 independent GEMMs
// (one per element xi of the 4x4 transformed tile) of the transformed
// kernels U[xi] (Out x In) with the transformed input tiles V[xi] (In x
// tiles): 16 multiplications per 2x2 outputs per (in, out) channel pair
// instead of 36, 2.25 times fewer flops in the GEMMs. The transforms are
// additions only (and halvings in G), so the result stays within float32
// rounding of the direct convolution.
//
//	B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//	G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//	A^T = [1 1 1 0; 0 1 -1 -1]
//
// The input gradient of such a convolution is the same convolution of the
// output gradient with the flipped, transposed kernel, so it reuses the
// forward pipeline and the forward pass's transformed kernels (winoFlip).
// The weight gradient is the adjoint of the same pipeline
// (winograd_grad.go). The transforms are in winograd_transform.go.

// winoTiles returns the number of 2x2 output tiles per image of g.
func (g geom) winoTiles() (th, tw int) { return (g.oh + 1) / 2, (g.ow + 1) / 2 }

// Chunking of the Winograd pipeline: a chunk of images holds at most
// winoBudget floats of transformed input and products (16*(In+Out) per
// tile), but at least winoMinTiles tiles, so that each of its 16 GEMMs has
// enough columns.
const (
	winoBudget   = 1 << 20
	winoMinTiles = 128
	// winoWholeTiles is the largest batch (in tiles) transformed at once.
	winoWholeTiles = 1024
)

// winoChunk returns how many images one Winograd chunk holds.
func (g geom) winoChunk() int {
	th, tw := g.winoTiles()
	tpi := th * tw
	tiles := max(winoMinTiles, winoBudget/(16*(g.cin+g.cout)))
	return max(1, min(g.n, (tiles+tpi-1)/tpi))
}

// winoWhole reports whether the batch has so few tiles that it is
// transformed at once and its 16 GEMMs are split over the goroutines
// instead of its images (chunks would give GEMMs of too few columns to
// amortise packing the kernels).
func (g geom) winoWhole() bool {
	th, tw := g.winoTiles()
	return g.n*th*tw <= winoWholeTiles
}

// winoSplitTiles is the number of tiles per row from which the transforms
// split rows into even and odd columns and run as elementwise (AVX2) loops
// over the row: below it, a loop over the tiles costs less.
const winoSplitTiles = 8

// winoBufLen returns the scratch floats the transforms of g need on one
// goroutine: a zero-padded input plane and four rows of it, or what
// winoInputPlane or winoOutputPlane need when more.
func (g geom) winoBufLen() int {
	th, tw := g.winoTiles()
	return max((2*th+6)*(2*tw+2), winoPlaneLen(th, tw), winoOutputPlaneLen(th, tw))
}

// workBuf returns buf[:n], or a new buffer when buf is too short or shared
// (by several goroutines).
func workBuf(buf []float32, n int, shared bool) []float32 {
	if shared || cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// winoFlops returns the flops of the 16 GEMMs over the whole batch.
func (g geom) winoFlops() float64 {
	th, tw := g.winoTiles()
	return 2 * 16 * float64(g.cout) * float64(g.cin) * float64(g.n*th*tw)
}

// winoSkew pads the stride between the 16 matrices of a transformed tile
// by one cache line: with strides that are multiples of 4 KB, the 16
// streams that the transforms read or write at once would all map to the
// same L1 set and evict each other.
const winoSkew = 16

// winoLd returns the stride between the 16 matrices of rows x cols.
func winoLd(rows, cols int) int { return rows*cols + winoSkew }

// winoFlip maps a row or column of a transformed tile of a kernel to that
// of the flipped kernel. Flipping g (g'[a][b] = g[2-a][2-b]) reverses the
// columns of G, which swaps its first and last rows and leaves the middle
// ones as they are, so G g' G^T is G g G^T with rows and columns 0 and 3
// swapped.
var winoFlip = [4]int{3, 1, 2, 0}

// winoConv computes the 3x3 stride-1 padding-1 convolution of xd (geometry
// g, input layout g.xcm) with the transformed kernels u (winoFilter: 16
// matrices of g.cout x g.cin, winoLd apart; when flip, u holds instead the
// transformed kernels of the forward convolution whose input gradient this
// is, g.cin x g.cout, and the GEMMs read them flipped and transposed) into yd (layout ycm), adding to it when acc.
// The batch is split into chunks of images (coarsePlan), each transformed,
// multiplied (16 GEMMs: in bfloat16 when g.bf16) and transformed back by
// one goroutine.
func winoConv(sc Scratch, g geom, u []float32, flip bool, xd, yd []float32, ycm, acc bool) {
	if g.empty() { // as gemmForward: every sum is empty
		if !acc {
			clear(yd[:g.n*g.cout*g.ohw()])
		}
		return
	}
	th, tw := g.winoTiles()
	tpi := th * tw
	uld := winoLd(g.cout, g.cin)
	// kernel multiplies matrix xi of the transformed kernels by b into c.
	kernel := func(sg sgemmFunc, xi, nt int, b, c []float32) {
		if !flip {
			sg(false, false, g.cout, nt, g.cin, 1, u[xi*uld:], g.cin, b, nt, 0, c, nt)
			return
		}
		r, q := winoFlip[xi/4], winoFlip[xi%4]
		sg(true, false, g.cout, nt, g.cin, 1, u[(4*r+q)*uld:], g.cout, b, nt, 0, c, nt)
	}
	if g.winoWhole() {
		// Few tiles: transform the whole batch, then split the 16 GEMMs
		// (not their columns) over the goroutines.
		nt := g.n * tpi
		vld, mld := winoLd(g.cin, nt), winoLd(g.cout, nt)
		v := get(sc, 16*vld)
		defer put(sc, v)
		m := get(sc, 16*mld)
		defer put(sc, m)
		g.winoInput(v, xd, 0, g.n, true, nil)
		w := 1
		if g.winoFlops() >= minCoarseFlops {
			w = runtime.GOMAXPROCS(0)
		}
		parallelFor(16, w, func(lo, hi int) {
			for xi := lo; xi < hi; xi++ {
				kernel(g.gemm(gemm.SgemmSerial, false), xi, nt, v[xi*vld:], m[xi*mld:])
			}
		})
		g.winoOutput(yd, m, 0, g.n, ycm, acc, true, nil)
		return
	}
	chunk, threads, sg, par := coarsePlan(g.n, g.winoChunk(), g.winoFlops())
	sg = g.gemm(sg, par)
	vs := scratchSet(sc, threads, 16*winoLd(g.cin, chunk*tpi))
	defer putScratchSet(sc, vs)
	ms := scratchSet(sc, threads, 16*winoLd(g.cout, chunk*tpi))
	defer putScratchSet(sc, ms)
	bufs := scratchSet(sc, threads, g.winoBufLen())
	defer putScratchSet(sc, bufs)
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		nt := cnt * tpi
		v, m := vs[w], ms[w]
		vld, mld := winoLd(g.cin, nt), winoLd(g.cout, nt)
		g.winoInput(v, xd, n0, cnt, par, bufs[w])
		for xi := range 16 {
			kernel(sg, xi, nt, v[xi*vld:], m[xi*mld:])
		}
		g.winoOutput(yd, m, n0, cnt, ycm, acc, par, bufs[w])
	})
}

// inputGradWinograd computes the input gradient dx (layout g.xcm, added to
// when acc) of the Winograd convolution g from the output gradient dy
// (channel-major) and the forward pass's transformed kernels u: the same
// convolution of dy with the flipped, transposed kernel.
func inputGradWinograd(sc Scratch, g geom, u, dy, dx []float32, acc bool) {
	tg := geom{n: g.n, cin: g.cout, h: g.oh, w: g.ow, cout: g.cin, k: 3, s: 1, p: 1, oh: g.h, ow: g.w, xcm: true, bf16: g.bf16}
	winoConv(sc, tg, u, true, dy, dx, g.xcm, acc)
}

package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// transposed returns the r x c matrix m (row stride ld) transposed.
func transposed(m []float32, r, c, ld int) []float32 {
	t := make([]float32, r*c)
	for i := range r {
		for j := range c {
			t[j*r+i] = m[i*ld+j]
		}
	}
	return t
}

// TestPatchSourceTPanels checks patchSourceT's panels against im2col's
// matrix transposed and packed by the definition, as TestPatchSourcePanels
// does for patchSource: chunks in the middle of the batch, blocks of
// positions and patch rows that start anywhere, panel widths 4, 16 and 32,
// with the mask tables and without, NaNs and negative zeros in the input.
func TestPatchSourceTPanels(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, g0 := range patchGeoms {
		g := withOut(g0)
		x := nastyInput(r, g.n*g.cin*g.h*g.w)
		for _, chunk := range chunksOf(g.n) {
			n0, cnt := chunk[0], chunk[1]
			col, ld := patchMatrix(g, x, n0, cnt)
			colT := transposed(col, g.ckk(), ld, ld) // ld x ckk
			for _, tabs := range []bool{false, true} {
				src := &patchSourceT{g: g, x: x, n0: n0, cnt: cnt}
				if tabs && g.gatherShapeT() {
					src.masks = g.patchTablesT()
				}
				for _, nr := range []int{4, 16, 32} {
					for trial := range 5 {
						p0, kc, j0, nc := 0, ld, 0, g.ckk()
						if trial > 0 && g.ckk() > 0 && ld > 0 {
							p0 = r.IntN(ld)
							kc = 1 + r.IntN(ld-p0)
							if trial < 3 {
								// Blocks of whole 8-position runs, as the GEMM asks.
								p0 = p0 / 8 * 8
								kc = max(8, kc/8*8)
								if p0+kc > ld {
									p0, kc = 0, ld
								}
							}
							j0 = r.IntN(g.ckk())
							nc = 1 + r.IntN(g.ckk()-j0)
						}
						what := fmt.Sprintf("%+v images [%d,%d) tables %v", g, n0, n0+cnt, tabs)
						checkPanels(t, r, what, src, colT, g.ckk(), p0, kc, j0, nc, nr)
					}
				}
			}
		}
	}
}

// TestTransposeGather compares transposeGather (assembly where the CPU
// has AVX2) with transposeGatherGo on random rows, masks and lengths (0
// included).
func TestTransposeGather(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for trial := range 100 {
		n := 8 * r.IntN(12)
		x := randSlice(r, 16*(n+5)+3)
		m := make([]uint32, len(x))
		for i := range m {
			if r.IntN(3) > 0 {
				m[i] = ^uint32(0)
			}
		}
		var rows [patchPanel]*float32
		var masks [patchPanel]*uint32
		for i := range patchPanel {
			o := r.IntN(len(x) - n)
			rows[i], masks[i] = &x[o], &m[r.IntN(len(x)-n)]
		}
		want := make([]float32, n*patchPanel)
		got := make([]float32, n*patchPanel+1)
		got[len(got)-1] = 9
		transposeGatherGo(want, &rows, &masks, n)
		transposeGather(got, &rows, &masks, n)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("trial %d (n %d): element %d = %v, want %v", trial, n, i, got[i], want[i])
			}
		}
		if got[len(got)-1] != 9 {
			t.Fatalf("trial %d: transposeGather wrote past its %d rows", trial, n)
		}
	}
}

// TestImplicitWeightGradBitIdentical checks that the weight gradient,
// stored, added to zeros and added to a gradient, gives the bits of the
// path through im2col's stored matrix (transposed where
// transposedWeightGrad says), chunk by chunk as gemmWeightGrad sums them,
// where the transposed patch matrix is gathered (on a CPU whose GEMM packs
// 16-wide panels) and where it is not (7x7 maps).
func TestImplicitWeightGradBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, sh := range [][5]int{{16, 16, 32, 32, 6}, {16, 3, 32, 32, 3}, {24, 16, 16, 16, 9}, {16, 40, 4, 4, 33}, {16, 8, 8, 8, 1}, {8, 5, 7, 7, 3}, {32, 32, 16, 16, 17}, {64, 32, 8, 8, 65}} {
		out, in, h, w, n := sh[0], sh[1], sh[2], sh[3], sh[4]
		for _, xcm := range []bool{false, true} {
			s := Shape{N: n, In: in, Out: out, H: h, W: w, K: 3, S: 1, P: 1, ChannelMajor: xcm}
			g := s.geom()
			t.Run(fmt.Sprintf("%v/implicit=%v", s, g.implicitPatchesT(out)), func(t *testing.T) {
				x, dy := randSlice(r, n*in*h*w), randSlice(r, out*n*h*w)
				ckk, ohw, ldy := g.ckk(), g.ohw(), n*g.ohw()
				chunk, threads, _, _ := coarsePlan(n, g.chunk(), g.flops())
				for _, start := range []string{"stored", "added to zeros", "added"} {
					dw := randSlice(r, out*in*9)
					if start == "added to zeros" {
						clear(dw)
					}
					acc := start != "stored"
					old := append([]float32(nil), dw...)
					Im2colWeightGrad(nil, s, x, dy, dw, acc)

					// The reference: the path of the stored patch matrix.
					want := append([]float32(nil), old...)
					sum := sumInPlace
					if g.transposedWeightGrad() {
						sum = sumTransposed
					}
					weightGrad(nil, out, want, acc, sum, n, chunk, threads, func(_, n0, cnt int, dst []float32, b float32) {
						col := make([]float32, ckk*cnt*ohw)
						g.im2colImages(col, x, n0, cnt, false)
						if sum == sumTransposed {
							gemm.Sgemm(false, true, ckk, out, cnt*ohw, 1, col, cnt*ohw, dy[n0*ohw:], ldy, b, dst, out)
							return
						}
						gemm.Sgemm(false, true, out, ckk, cnt*ohw, 1, dy[n0*ohw:], ldy, col, cnt*ohw, b, dst, ckk)
					})
					same(t, "weight gradient "+start, dw, want)
				}
			})
		}
	}
}

// BenchmarkImplicitWeightGrad times the weight gradient of ResNet-18-w16's
// stride-1 3x3 layers (and the stem) at batch 128 through patchSourceT
// beside im2col + GEMM (the previous path: transposed where
// transposedWeightGrad says), in the same run.
func BenchmarkImplicitWeightGrad(b *testing.B) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, sh := range [][3]int{{16, 16, 32}, {3, 16, 32}, {32, 32, 16}, {64, 64, 8}, {128, 128, 4}} {
		in, out, hw := sh[0], sh[1], sh[2]
		n := 128
		s := Shape{N: n, In: in, Out: out, H: hw, W: hw, K: 3, S: 1, P: 1, ChannelMajor: true}
		g := s.geom()
		x, dy := randSlice(r, n*in*hw*hw), randSlice(r, out*n*hw*hw)
		dw := make([]float32, out*in*9)
		b.Run(fmt.Sprintf("%d-%d/%dx%d/implicit=%v", in, out, hw, hw, g.implicitPatchesT(out)), func(b *testing.B) {
			for b.Loop() {
				Im2colWeightGrad(nil, s, x, dy, dw, false)
			}
			b.ReportMetric(g.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("%d-%d/%dx%d/im2col", in, out, hw, hw), func(b *testing.B) {
			ckk, ohw, ldy := g.ckk(), g.ohw(), n*g.ohw()
			chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
			cols := scratchSet(nil, threads, ckk*chunk*ohw)
			trans := g.transposedWeightGrad()
			sum := sumInPlace
			if trans {
				sum = sumTransposed
			}
			for b.Loop() {
				weightGrad(nil, out, dw, false, sum, n, chunk, threads, func(w, n0, cnt int, dst []float32, bt float32) {
					g.im2colImages(cols[w], x, n0, cnt, par)
					if trans {
						sg(false, true, ckk, out, cnt*ohw, 1, cols[w], cnt*ohw, dy[n0*ohw:], ldy, bt, dst, out)
						return
					}
					sg(false, true, out, ckk, cnt*ohw, 1, dy[n0*ohw:], ldy, cols[w], cnt*ohw, bt, dst, ckk)
				})
			}
			b.ReportMetric(g.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

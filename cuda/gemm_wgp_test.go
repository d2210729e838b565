package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

// TestWGPConstants checks that wgpChunk and wgpCountStride are
// gemm_wg.cu's WGP_CHUNK and WGP_COUNT_STRIDE.
func TestWGPConstants(t *testing.T) {
	src := kernelSource(t, "gemm_wg.cu")
	for _, c := range []struct {
		name string
		want int
	}{{"WGP_CHUNK", wgpChunk}, {"WGP_COUNT_STRIDE", wgpCountStride}} {
		if got := kernelDefine(t, src, "gemm_wg.cu", c.name); got != c.want {
			t.Errorf("gemm_wg.cu's %s is %d, the backend's %d", c.name, got, c.want)
		}
	}
}

// TestGemmWGPEmulated checks gemm_wgp_* (TCWGP: the packing in the
// product's launch) on the CPU emulator against gemm_wg_*'s two launches
// (TCWG), bit for bit: the same rounded operands must reach the same
// products. The shapes put the packing over several chunks of k in both
// precisions (K past 32 * wgpChunk words: 256 TF32 or 512 BF16 values),
// over two tiles of B's rows, in batches, in every transposition, with
// factors whose rows start on 16 bytes (the packing's float4 loads) and
// others (its checked loads), and an empty K (C = beta*C). In the
// products with N 256 the block reads the last piece of chunk 0 (B's last
// 32 rows), which the emulator's warp stalls can leave unwritten when a
// count is raised before the packers' barrier: three such shapes, 24
// launches, each with its own draw of stalled warps. The emulator runs
// four blocks of gemm_wgp_* at once (EMU_EXPORT_CONCURRENT), so that the
// 130 x 300 products (2 x 2 tiles, two batches: two groups of four
// blocks) have blocks that multiply pieces other blocks packed and pack
// pieces others wait for. Four random shapes follow. testGemmPrecision
// (TestGemmPrecisionEmulated) checks the values against the rounded
// product on the general shapes.
func TestGemmWGPEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	r := rand.New(rand.NewPCG(3, 11))
	type shape struct {
		m, n, k, batch int
		aligned        bool
	}
	shapes := []shape{{40, 260, 600, 2, true}, {100, 256, 600, 2, true}, {32, 256, 530, 1, true}, {64, 256, 300, 2, false},
		{35, 30, 530, 1, false}, {9, 7, 0, 2, true}, {33, 20, 70, 3, false}, {130, 300, 600, 2, true}}
	for range 4 { // and random ones
		shapes = append(shapes, shape{1 + r.IntN(150), 1 + r.IntN(300), r.IntN(600), 1 + r.IntN(3), r.IntN(2) == 0})
	}
	for _, p := range []Precision{TF32, BF16} {
		wgp, wg := backendOnEmulator(t, e, p, TCWGP), backendOnEmulator(t, e, p, TCWG)
		for _, s := range shapes {
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					g := tensor.GemmArgs{TransA: ta, TransB: tb, M: s.m, N: s.n, K: s.k, Alpha: 1.5, Beta: 0.5, Batch: s.batch}
					ra, ca, rb, cb := g.M, g.K, g.K, g.N
					if ta {
						ra, ca = ca, ra
					}
					if tb {
						rb, cb = cb, rb
					}
					g.LDA, g.LDB, g.LDC = max(ca, 1), max(cb, 1), g.N
					if s.aligned {
						g.LDA, g.LDB = (g.LDA+3)/4*4, (g.LDB+3)/4*4
					} else {
						g.OffA, g.OffB, g.LDA, g.LDB = 1, 3, g.LDA+1, g.LDB+2
					}
					g.StrideA, g.StrideB, g.StrideC = ra*g.LDA, rb*g.LDB, g.M*g.LDC
					na, nb, nc := gemmSizes(g)
					a, b, c := randSlice(r, na), randSlice(r, nb), randSlice(r, nc)
					what := fmt.Sprintf("%v tA=%v tB=%v %dx%dx%d batch %d, aligned %v", p, ta, tb, s.m, s.n, s.k, s.batch, s.aligned)
					sameBits(t, what+": "+wgp.gemmFor(g).name+" vs "+wg.gemmFor(g).name, runGemm(wgp, g, a, b, c), runGemm(wg, g, a, b, c))
				}
			}
		}
	}
}

// runGemm runs g on be with factors a and b and C's initial values c, and
// returns C.
func runGemm(be *Backend, g tensor.GemmArgs, a, b, c []float32) []float32 {
	bufs := [3]tensor.Buffer{}
	for i, v := range [][]float32{a, b, c} {
		bufs[i] = be.Alloc(max(len(v), 1))
		be.CopyIn(bufs[i], 0, v)
	}
	g.A, g.B, g.C = bufs[0], bufs[1], bufs[2]
	be.Gemm(g)
	out := make([]float32, len(c))
	be.CopyOut(out, g.C, 0)
	for _, x := range bufs {
		be.Release(x)
	}
	return out
}

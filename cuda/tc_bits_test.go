package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/tensor"
)

// TestTCKernelsSameBits checks on the CPU emulator that the TF32 kernels
// TCAuto runs (gemm_tc3_tf32 and conv_tc.cu's *_tf32rr, which round each
// fragment in registers) give the bits of TCV2's (gemm_tc2_tf32 and the
// *_tf32 convolutions, which round each panel in shared memory) and of
// TCV4's convolutions (*_tf32rl, conv_wg.cu's mapping of the gathers):
// the default may change between them without changing what a run
// computes.
// The factors are not pre-rounded, so the rounding itself is compared;
// the products cover both tile heights of the convolutions (64 and 128
// rows), every pass, a strided input gradient and a product with K past
// a multiple of 32, in both operand layouts. It skips without g++ or
// under -short. The products of gemm_wg.cu (TCWG, TCWG3, TCWGM, TCWGM3,
// TCWGMS, TCWGS and TCWGP: packed operands, wgmma) are compared too: the emulator's wgmma
// rounds each k step's exact sum once, as its mma.sync does, so the bits
// must agree there; and so are the BF16 products TCAuto measures against
// each other (gemm_tc2_bf16, gemm_bf16, gemm_wg_bf16, gemm_wgs_bf16,
// gemm_wgp_bf16).
func TestTCKernelsSameBits(t *testing.T) {
	e := cudatest.NewEmulator(t)
	backend := func(k TCKernel) *Backend { return backendOnEmulator(t, e, TF32, k) }
	auto, v2, v4 := backend(TCAuto), backend(TCV2), backend(TCV4)
	wgs := []*Backend{backend(TCWG), backend(TCWG3), backend(TCWGM), backend(TCWGM3), backend(TCWGMS), backend(TCWGS), backend(TCWGP)}
	if a, b := auto.gemmKernelName(), v2.gemmKernelName(); a != "gemm_tc3_tf32" || b != "gemm_tc2_tf32" {
		t.Fatalf("kernels %s and %s, want gemm_tc3_tf32 and gemm_tc2_tf32", a, b)
	}
	if a, _ := auto.convTCFor("fwd", 72); a.name != "conv_fwd_tc_tf32rr" {
		t.Fatalf("TCAuto's forward kernel %s, want conv_fwd_tc_tf32rr", a.name)
	}
	r := rand.New(rand.NewPCG(5, 7))

	t.Run("gemm", func(t *testing.T) {
		for _, g := range sameBitsShapes {
			na, nb, nc := gemmSizes(g)
			a, b, c := randSlice(r, na), randSlice(r, nb), randSlice(r, nc)
			outs := make([][]float32, 2+len(wgs))
			for i, be := range append([]*Backend{auto, v2}, wgs...) {
				outs[i] = runGemm(be, g, a, b, c) // at offset 0: rows on 16 bytes where the leading dimension allows
			}
			sameBits(t, "gemm "+auto.gemmKernelName()+" vs "+v2.gemmKernelName(), outs[0], outs[1])
			for i, wg := range wgs {
				sameBits(t, "gemm "+wg.gemmKernelName()+" vs "+v2.gemmKernelName(), outs[2+i], outs[1])
			}
		}
	})

	// BF16: TCAuto's gemm_tc2_bf16, TCV1's gemm_bf16 and gemm_wg.cu's
	// (TCAuto's measurement, gemm_tune.go, takes them as equals).
	t.Run("gemmBF16", func(t *testing.T) {
		var bes []*Backend
		for _, k := range []TCKernel{TCAuto, TCV1, TCWG, TCWGS, TCWGP} {
			bes = append(bes, backendOnEmulator(t, e, BF16, k))
		}
		for _, g := range sameBitsShapes {
			na, nb, nc := gemmSizes(g)
			a, b, c := randSlice(r, na), randSlice(r, nb), randSlice(r, nc)
			ref := runGemm(bes[0], g, a, b, c)
			for _, be := range bes[1:] {
				sameBits(t, "gemm "+be.gemmKernelName()+" vs "+bes[0].gemmKernelName(), runGemm(be, g, a, b, c), ref)
			}
		}
	})

	for _, tc := range []convCase{
		{"Rows72", tensor.ConvShape{N: 2, In: 6, Out: 72, H: 7, W: 6, K: 3, S: 1, P: 1}},
		{"Rows40Stride2", tensor.ConvShape{N: 2, In: 9, Out: 40, H: 9, W: 8, K: 3, S: 2, P: 1, ChannelMajor: true}},
		{"Dense1x1", tensor.ConvShape{N: 2, In: 36, Out: 70, H: 5, W: 5, K: 1, S: 1, P: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			oh, ow := s.OutH(), s.OutW()
			x, w, dy := randSlice(r, s.N*s.In*s.H*s.W), randSlice(r, s.Out*s.In*s.K*s.K), randSlice(r, s.Out*s.N*oh*ow)
			var ys, dxs, dws [3][]float32
			for i, be := range []*Backend{auto, v2, v4} {
				al := be.ConvAlgos(s, conv.Auto)
				gx, gw, gdy := devOperand(be, x), devOperand(be, w), devOperand(be, dy)
				gy := devOperand(be, make([]float32, len(dy)))
				be.ConvForward(gy, gx, gw, tensor.Operand{}, s, al, false)
				gdx := devOperand(be, make([]float32, len(x)))
				be.ConvInputGrad(gdx, gdy, gw, s, al, nil, false)
				gdw := devOperand(be, make([]float32, len(w)))
				be.ConvWeightGrad(gdw, gdy, gx, s, al, false)
				ys[i], dxs[i], dws[i] = fromDev(be, gy), fromDev(be, gdx), fromDev(be, gdw)
			}
			for i, name := range []string{"TCV2's", "TCV4's (*_tf32rl)"} {
				sameBits(t, "forward, TCAuto's vs "+name, ys[0], ys[1+i])
				sameBits(t, "input gradient, TCAuto's vs "+name, dxs[0], dxs[1+i])
				sameBits(t, "weight gradient, TCAuto's vs "+name, dws[0], dws[1+i])
			}
		})
	}
}

// sameBitsShapes are TestTCKernelsSameBits' products: odd sizes, beta,
// batches and both transpositions.
var sameBitsShapes = []tensor.GemmArgs{
	{M: 70, N: 90, K: 100, Alpha: 1, Batch: 1, LDA: 100, LDB: 90, LDC: 90},
	{TransB: true, M: 33, N: 130, K: 72, Alpha: 1.5, Beta: 0.5, Batch: 2, LDA: 72, LDB: 72, LDC: 130, StrideA: 33 * 72, StrideB: 130 * 72, StrideC: 33 * 130},
	{TransA: true, M: 129, N: 40, K: 37, Alpha: -1, Batch: 1, LDA: 129, LDB: 40, LDC: 40},
}

// sameBits reports the elements where got and want differ in their bits.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad++; bad <= 3 {
				t.Errorf("%s: [%d] = %v, want %v (the same bits)", what, i, got[i], want[i])
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(want))
	}
}

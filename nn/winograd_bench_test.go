package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// winoBenchShapes are the 3x3 stride-1 convolutions of a CIFAR ResNet-18
// at batch 32 (stem, then the four stages), of its width-16 variant at
// batch 128, and a few shapes off the ResNet diagonal.
var winoBenchShapes = []struct {
	n, in, out, hw int
}{
	{32, 3, 64, 32},
	{32, 64, 64, 32}, {32, 128, 128, 16}, {32, 256, 256, 8}, {32, 512, 512, 4},
	{128, 16, 16, 32}, {128, 32, 32, 16}, {128, 64, 64, 8}, {128, 128, 128, 4},
	{32, 64, 64, 16}, {32, 128, 128, 8}, {32, 256, 256, 4}, {32, 512, 512, 2},
	{8, 256, 256, 8}, {8, 512, 512, 4},
}

// BenchmarkWinograd times, in the same loop, forward and backward (weight
// and input gradient) of each shape through im2col and through Winograd,
// on channel-major activations. It reports GFLOP/s-equivalent (direct
// convolution flops: forward 2*N*H*W*Out*In*9, backward twice that) and the
// ratio of Winograd's speed to im2col's (> 1: Winograd faster).
func BenchmarkWinograd(b *testing.B) { benchWinograd(b, true) }

// BenchmarkWinogradWeightGrad is BenchmarkWinograd with an input that needs
// no gradient: its backward pass is the weight gradient alone.
func BenchmarkWinogradWeightGrad(b *testing.B) { benchWinograd(b, false) }

// benchWinograd runs BenchmarkWinograd, with the input gradient when dx.
func benchWinograd(b *testing.B, dx bool) {
	for _, tc := range winoBenchShapes {
		b.Run(fmt.Sprintf("n%d-c%dto%d-%dx%d", tc.n, tc.in, tc.out, tc.hw, tc.hw), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			conv := NewConv2d(tc.in, tc.out, 3, 1, 1, false, r)
			a := NewArena()
			conv.SetArena(a)
			x := autograd.NewVar(newLayout(true, tc.n, tc.in, tc.hw, tc.hw), dx)
			NormalInit(tensor.FromSlice(storage(x.Value), x.Value.Numel()), 1, r)
			flops := 2 * float64(tc.n*tc.hw*tc.hw*tc.out*tc.in*9)
			bflops := 2 * flops
			if !dx {
				bflops = flops
			}
			algos := []ConvAlgo{AlgoIm2col, AlgoWinograd}
			var fwd, bwd [2]time.Duration
			for b.Loop() {
				for i, algo := range algos {
					conv.Algo = algo
					a.Reset()
					x.Grad, conv.Weight.Grad = nil, nil
					tp := autograd.NewTape()
					t0 := time.Now()
					y := conv.Forward(tp, x)
					t1 := time.Now()
					g := a.tensor(true, y.Value.Shape()...)
					clear(storage(g))
					t2 := time.Now()
					tp.BackwardWith(y, g)
					t3 := time.Now()
					fwd[i] += t1.Sub(t0)
					bwd[i] += t3.Sub(t2)
				}
			}
			gf := func(f float64, d time.Duration) float64 { return f * float64(b.N) / d.Seconds() / 1e9 }
			b.ReportMetric(gf(flops, fwd[0]), "im2col-fwd-GF/s")
			b.ReportMetric(gf(flops, fwd[1]), "wino-fwd-GF/s")
			b.ReportMetric(gf(bflops, bwd[0]), "im2col-bwd-GF/s")
			b.ReportMetric(gf(bflops, bwd[1]), "wino-bwd-GF/s")
			b.ReportMetric(fwd[0].Seconds()/fwd[1].Seconds(), "fwd-ratio")
			b.ReportMetric(bwd[0].Seconds()/bwd[1].Seconds(), "bwd-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

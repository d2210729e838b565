package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkConv2d times forward and backward of the 3x3 convolutions of a
// CIFAR ResNet-18 (base width 16 and 64) on channel-major activations and
// reports GFLOP/s (forward 2*N*OH*OW*Out*In*9, backward twice that).
func BenchmarkConv2d(b *testing.B) {
	for _, tc := range []struct {
		n, c, hw int
	}{{128, 16, 32}, {128, 64, 8}, {32, 64, 32}, {32, 256, 8}, {32, 512, 4}} {
		b.Run(fmt.Sprintf("n%d-c%d-%dx%d", tc.n, tc.c, tc.hw, tc.hw), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			conv := NewConv2d(tc.c, tc.c, 3, 1, 1, false, r)
			a := NewArena()
			conv.SetArena(a)
			x := autograd.NewVar(newLayout(true, tc.n, tc.c, tc.hw, tc.hw), true)
			NormalInit(tensor.FromSlice(storage(x.Value), x.Value.Numel()), 1, r)
			flops := 3 * 2 * float64(tc.n*tc.hw*tc.hw*tc.c*tc.c*9)
			for b.Loop() {
				a.Reset()
				x.Grad = nil
				tp := autograd.NewTape()
				y := conv.Forward(tp, x)
				g := a.tensor(true, y.Value.Shape()...)
				clear(storage(g))
				tp.BackwardWith(y, g)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

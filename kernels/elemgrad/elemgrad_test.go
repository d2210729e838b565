package elemgrad

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRunSplitSameBits checks that Run, which splits large slices across
// goroutines, gives the bits of one call of each kernel over the whole
// slice (odd and zero lengths), and that Abs and ReLU write +0 where the
// gradient does not flow, over a destination that held other values.
func TestRunSplitSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	kernels := map[string]Kernel{"Square": Square, "Abs": Abs, "Exp": Exp, "Log": Log, "Sqrt": Sqrt,
		"Pow": Pow(1.5), "ReLU": ReLU, "Tanh": Tanh, "Sigmoid": Sigmoid}
	for _, n := range []int{0, 1, 7, 100003} {
		g, in := make([]float32, n), make([]float32, n)
		for i := range g {
			g[i], in[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			if i%5 == 0 {
				in[i] = 0
			}
		}
		for name, k := range kernels {
			want, got := make([]float32, n), make([]float32, n)
			for i := range got {
				got[i] = -7
			}
			k(want, g, in)
			Run(k, got, g, in)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s, n=%d: element %d: %v, want %v", name, n, i, got[i], want[i])
				}
				if (name == "Abs" || name == "ReLU") && in[i] == 0 && math.Float32bits(got[i]) != 0 {
					t.Fatalf("%s at 0: %v, want +0", name, got[i])
				}
			}
		}
	}
}

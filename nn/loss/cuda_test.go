package loss

import (
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// cudaTol bounds |cuda - cpu| / (1 + |cpu|) for the losses on the CUDA
// backend, which fuses them (contrastive.cu, losses.cu, rows.cu: the CPU
// kernels' arithmetic, double-precision sums) but keeps the GPU's own
// float32 exponentials and GEMM summation order; the tolerance of the
// composed fallbacks (composedTol) bounds it with room (the differences on
// the fake driver are far smaller).
const cudaTol = composedTol

// cudaDevice returns the first GPU's device, skipping the test without a
// usable one.
func cudaDevice(t *testing.T) tensor.Device {
	t.Helper()
	if err := cuda.Available(); err != nil {
		t.Skip(err)
	}
	return tensor.Device("cuda:0")
}

// TestLossesOnCUDA runs InfoNCE and NT-Xent (contrastiveCases), BYOL,
// Barlow Twins and cross-entropy forward and backward on the GPU (skipped
// without one): within cudaTol of the CPU.
func TestLossesOnCUDA(t *testing.T) {
	dev := cudaDevice(t)
	var worst float64
	check := func(t *testing.T, got, want [][]float32) {
		t.Helper()
		for i := range want {
			dd := relDiff(got[i], want[i])
			worst = max(worst, dd)
			if dd > cudaTol {
				t.Errorf("result %d (0: loss, then gradients) differs from the CPU by %g, want <= %g", i, dd, cudaTol)
			}
		}
	}
	for _, tc := range contrastiveCases {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.run(t, dev), tc.run(t, tensor.CPU)) })
	}
	pairs := []struct {
		name string
		f    func(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var
	}{
		{"BYOL", func(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var { return BYOL(tp, a, b) }},
		{"BarlowTwins", func(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var {
			return BarlowTwins(tp, a, b, DefaultBarlowLambda)
		}},
		{"CrossEntropy", func(tp *autograd.Tape, a, _ *autograd.Var) *autograd.Var {
			return CrossEntropy(tp, a, []int{0, 5, 3, 3, 12, 1, 7, 2, 9, 4, 11, 0, 6, 8, 10, 2})
		}},
	}
	for _, pc := range pairs {
		t.Run(pc.name, func(t *testing.T) {
			run := func(dev tensor.Device) [][]float32 {
				r := rand.New(rand.NewPCG(4, 9))
				var vs []*autograd.Var
				for range 2 {
					x, err := tensor.RandN(r, 16, 13).To(dev)
					if err != nil {
						t.Fatal(err)
					}
					vs = append(vs, autograd.NewVar(x, true))
				}
				tp := autograd.NewTape()
				out := pc.f(tp, vs[0], vs[1])
				tp.Backward(autograd.MulScalar(tp, out, 1.5))
				res := [][]float32{toHost(t, out.Value), toHost(t, vs[0].Grad)}
				if vs[1].Grad != nil {
					res = append(res, toHost(t, vs[1].Grad))
				}
				return res
			}
			check(t, run(dev), run(tensor.CPU))
		})
	}
	t.Logf("largest difference on %s: %g", dev, worst)
}

package loss

import (
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

func toHost(t *testing.T, x *tensor.Tensor) []float32 { t.Helper(); return hostless.HostData(t, x) }

var (
	bitsEqual = hostless.SameBits
	relDiff   = hostless.RelDiff
)

// composedTol bounds |hostless - cpu| / (1 + |cpu|) for a loss composed of
// autograd operations in float32 ("hostless") against the CPU's fused
// float64 loop. The largest difference measured is logged.
const composedTol = 1e-5

// TestLossesOnHostless runs the losses that compute on the device forward
// and backward on the CPU, on "hostlessfused" (tensor.LossBackend
// delegated to the CPU loops: the CPU's bits) and on "hostless" (composed
// of autograd operations: within composedTol), for odd sizes, a single row
// and column, a zero row (norm below eps) or constant column (variance 0),
// and a detached input.
func TestLossesOnHostless(t *testing.T) {
	type lossFn = func(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var
	byol := func(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var { return BYOL(tp, a, b) }
	barlow := func(lambda float64) lossFn {
		return func(tp *autograd.Tape, a, b *autograd.Var) *autograd.Var { return BarlowTwins(tp, a, b, lambda) }
	}
	tests := []struct {
		name     string
		f        lossFn
		b, d     int
		zeroRow  bool
		detachB  bool
		seedGrad float32
	}{
		{"BYOL", byol, 7, 13, false, false, 1},
		{"BYOLOne", byol, 1, 1, false, false, 1},
		{"BYOLLarge", byol, 64, 257, false, false, 0.5},
		{"BYOLZeroRow", byol, 5, 3, true, false, 1},
		{"BYOLDetached", byol, 6, 9, false, true, 2},
		{"Barlow", barlow(DefaultBarlowLambda), 7, 13, false, false, 1},
		{"BarlowOneRow", barlow(0.5), 1, 3, false, false, 1},
		{"BarlowOneColumn", barlow(DefaultBarlowLambda), 5, 1, false, false, 0.5},
		{"BarlowLarge", barlow(DefaultBarlowLambda), 64, 129, false, false, 1},
		{"BarlowConstantColumn", barlow(0.1), 6, 4, true, false, 1},
		{"BarlowDetached", barlow(0), 9, 5, false, true, 2},
	}
	run := func(t *testing.T, dev tensor.Device, f lossFn, b, d int, zeroRow, detachB bool, s float32) [][]float32 {
		t.Helper()
		r := rand.New(rand.NewPCG(3, uint64(b*1000+d)))
		vars := make([]*autograd.Var, 2)
		for i := range vars {
			x := tensor.RandN(r, b, d)
			if zeroRow { // a zero row and a zero column (variance 0)
				clear(x.Data()[:d])
				for r := range b {
					x.Data()[r*d] = 0
				}
			}
			v, err := x.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			vars[i] = autograd.NewVar(v, !(i == 1 && detachB))
		}
		tp := autograd.NewTape()
		out := f(tp, vars[0], vars[1])
		if out.Value.Device() != dev {
			t.Fatalf("loss on %s, want %s", out.Value.Device(), dev)
		}
		tp.Backward(autograd.MulScalar(tp, out, s))
		res := [][]float32{toHost(t, out.Value)}
		for _, v := range vars {
			if !v.RequiresGrad {
				if v.Grad != nil {
					t.Fatalf("gradient for a detached input")
				}
				continue
			}
			if v.Grad == nil || v.Grad.Device() != dev {
				t.Fatalf("gradient %v, want a tensor on %s", v.Grad, dev)
			}
			res = append(res, toHost(t, v.Grad))
		}
		return res
	}
	var worst float64
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := run(t, tensor.CPU, tc.f, tc.b, tc.d, tc.zeroRow, tc.detachB, tc.seedGrad)
			got := run(t, hostless.FusedDevice, tc.f, tc.b, tc.d, tc.zeroRow, tc.detachB, tc.seedGrad)
			for i := range want {
				if !bitsEqual(got[i], want[i]) {
					t.Errorf("%s: result %d (0: loss, then gradients) differs from the CPU's bits by %g", hostless.FusedName, i, relDiff(got[i], want[i]))
				}
			}
			got = run(t, hostless.Device, tc.f, tc.b, tc.d, tc.zeroRow, tc.detachB, tc.seedGrad)
			for i := range want {
				dd := relDiff(got[i], want[i])
				worst = max(worst, dd)
				if dd > composedTol {
					t.Errorf("%s: result %d differs from the CPU by %g, want <= %g", hostless.Name, i, dd, composedTol)
				}
			}
		})
	}
	t.Logf("largest difference on %s: %g", hostless.Name, worst)
}

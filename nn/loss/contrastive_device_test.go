package loss

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// contrastiveCase is one InfoNCE or NT-Xent configuration of the device
// tests.
type contrastiveCase struct {
	name      string
	ntxent    bool
	b, d, n   int
	opt       ContrastiveOptions
	detachK   bool
	seedGrad  float32
	emptyNegs bool // a (0, d) negatives matrix instead of nil
}

// contrastiveCases covers every ε and negatives setting, a single sample,
// odd and large sizes, no memory negatives, a detached key and incoming
// gradients other than 1.
var contrastiveCases = []contrastiveCase{
	{"InfoNCE", false, 7, 13, 5, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 1, false},
	{"InfoNCEMemoryOnly", false, 6, 9, 11, ContrastiveOptions{Tau: 0.2, Eps: 1}, false, 1, false},
	{"InfoNCEEps0", false, 5, 8, 4, ContrastiveOptions{Tau: 0.1, Eps: 0, BatchNegatives: true}, false, 0.5, false},
	{"InfoNCEEpsHalfMemoryOnly", false, 4, 3, 6, ContrastiveOptions{Tau: 0.5, Eps: 0.5}, false, 2, false},
	{"InfoNCEBatchOnly", false, 8, 16, 0, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 1, false},
	{"InfoNCEEmptyNegatives", false, 3, 4, 0, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 1, true},
	{"InfoNCEDetachedKey", false, 9, 7, 10, ContrastiveOptions{Tau: 0.2, Eps: 1}, true, 1, false},
	{"InfoNCEOne", false, 1, 1, 1, ContrastiveOptions{Tau: 0.5, Eps: 1}, false, 1, false},
	{"InfoNCELarge", false, 64, 128, 256, ContrastiveOptions{Tau: 0.2, Eps: 1, BatchNegatives: true}, false, 1, false},
	{"NTXent", true, 7, 13, 0, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 1, false},
	{"NTXentMemory", true, 6, 9, 5, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 0.5, false},
	{"NTXentMemoryOnlyEps0", true, 5, 4, 7, ContrastiveOptions{Tau: 0.1, Eps: 0}, false, 1, false},
	{"NTXentEpsHalf", true, 4, 6, 3, ContrastiveOptions{Tau: 0.3, Eps: 0.5, BatchNegatives: true}, false, 2, false},
	{"NTXentOne", true, 1, 2, 0, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 1, false},
	{"NTXentEmptyNegatives", true, 3, 5, 0, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 1, true},
	{"NTXentLarge", true, 64, 128, 256, ContrastiveOptions{Tau: 0.5, Eps: 1, BatchNegatives: true}, false, 1, false},
}

// run computes the case's loss (times seedGrad) and its gradients on dev
// and returns them on the host: the loss, then the gradient of each input
// that requires one.
func (tc contrastiveCase) run(t *testing.T, dev tensor.Device) [][]float32 {
	t.Helper()
	b, d, n := tc.b, tc.d, tc.n
	r := rand.New(rand.NewPCG(11, uint64(b*1000+d)))
	on := func(x *tensor.Tensor) *tensor.Tensor {
		v, err := x.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := autograd.NewVar(on(tensor.FromSlice(randUnit(r, b, d), b, d)), true)
	c := autograd.NewVar(on(tensor.FromSlice(randUnit(r, b, d), b, d)), !tc.detachK)
	var neg *autograd.Var
	if n > 0 || tc.emptyNegs {
		neg = autograd.Const(on(tensor.FromSlice(randUnit(r, n, d), n, d)))
	}
	tp := autograd.NewTape()
	var out *autograd.Var
	if tc.ntxent {
		out = NTXent(tp, a, c, neg, tc.opt)
	} else {
		out = InfoNCE(tp, a, c, neg, tc.opt)
	}
	if out.Value.Device() != dev {
		t.Fatalf("loss on %s, want %s", out.Value.Device(), dev)
	}
	tp.Backward(autograd.MulScalar(tp, out, tc.seedGrad))
	res := [][]float32{toHost(t, out.Value)}
	for _, v := range []*autograd.Var{a, c} {
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
	if neg != nil && neg.Grad != nil {
		t.Fatalf("the negatives received a gradient")
	}
	return res
}

// TestContrastiveOnHostless runs InfoNCE and NT-Xent (contrastiveCases)
// forward and backward on the CPU, on "hostlessfused"
// (tensor.ContrastiveBackend delegated to the CPU loops: the CPU's bits)
// and on "hostless" (composed of autograd operations in float32: within
// composedTol of the CPU's float64 log-sum-exp; the logits are at most
// 1/τ = 10 in magnitude, so a float32 log-sum-exp is off by a few 1e-7).
func TestContrastiveOnHostless(t *testing.T) {
	var worst float64
	for _, tc := range contrastiveCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.run(t, tensor.CPU)
			got := tc.run(t, hostless.FusedDevice)
			for i := range want {
				if !bitsEqual(got[i], want[i]) {
					t.Errorf("%s: result %d (0: loss, then gradients) differs from the CPU's bits by %g", hostless.FusedName, i, relDiff(got[i], want[i]))
				}
			}
			got = tc.run(t, hostless.Device)
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

// composedCase evaluates a contrastive fixture case with the composed
// fallback (contrast_composed.go) instead of the fused loss.
func composedCase(c *fixtureCase, tp *autograd.Tape, v map[string]*autograd.Var) *autograd.Var {
	opt := ContrastiveOptions{Tau: c.Params.Tau, Eps: c.Params.Eps, BatchNegatives: c.Params.BatchNegatives}
	var neg *tensor.Tensor
	if nv := v["negatives"]; nv != nil && nv.Value.Dim(0) > 0 {
		neg = nv.Value.Contiguous()
	}
	if c.Kind == "infonce" {
		return infoNCEComposed(tp, v["q"], v["k"], neg, opt)
	}
	return ntXentComposed(tp, v["z1"], v["z2"], neg, opt)
}

// TestContrastiveComposed checks the composed InfoNCE and NT-Xent (the
// path of a backend without tensor.ContrastiveBackend) on the CPU against
// PyTorch (every contrastive fixture case, the tolerances of
// TestTorchParity) and against float64 central differences (gradcheck,
// the tolerances of TestGradcheck).
func TestContrastiveComposed(t *testing.T) {
	for _, c := range loadCases(t) {
		if c.Kind != "infonce" && c.Kind != "ntxent" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			names := c.names()
			inputs := make([]*tensor.Tensor, len(names))
			vars := map[string]*autograd.Var{}
			var consts []int
			for i, n := range names {
				in := c.Inputs[n]
				inputs[i] = tensor.FromSlice(in.Data, in.Shape...)
				_, isGrad := c.Grads[n]
				if !isGrad {
					consts = append(consts, i)
				}
				vars[n] = autograd.NewVar(inputs[i].Clone(), isGrad)
			}
			tp := autograd.NewTape()
			out := composedCase(&c, tp, vars)
			got := float64(out.Value.Item())
			if math.Abs(got-c.Loss) > 1e-4*math.Abs(c.Loss) {
				t.Errorf("loss %v, PyTorch %v", got, c.Loss)
			}
			tp.Backward(out)
			for n, want := range c.Grads {
				gd := vars[n].Grad.Data()
				var scale, worst float64
				for j, w := range want {
					scale = math.Max(scale, math.Abs(w))
					worst = math.Max(worst, math.Abs(float64(gd[j])-w))
				}
				if worst > 1e-4*scale {
					t.Errorf("gradient of %s differs from PyTorch by %.3g (largest element %.3g)", n, worst, scale)
				}
			}
			f := func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
				v := map[string]*autograd.Var{}
				for i, n := range names {
					v[n] = in[i]
				}
				return composedCase(&c, tp, v)
			}
			gradcheck.Assert(t, f, inputs, gradcheck.Options{Const: consts, Step: 1e-2, Atol: 1e-3, Rtol: 1e-2})
		})
	}
}

// TestCrossEntropyOnHostless checks that CrossEntropy computes on its
// logits' device (autograd.CrossEntropy through tensor.RowsBackend, host
// labels): the CPU's bits on "hostlessfused", within composedTol on
// "hostless" (the fallback of core Backend operations in float32).
func TestCrossEntropyOnHostless(t *testing.T) {
	tests := []struct {
		name string
		b, c int
	}{{"Small", 3, 5}, {"OneClass", 4, 1}, {"Large", 64, 257}}
	run := func(t *testing.T, dev tensor.Device, b, c int) [][]float32 {
		t.Helper()
		r := rand.New(rand.NewPCG(2, uint64(b*1000+c)))
		labels := make([]int, b)
		for i := range labels {
			labels[i] = r.IntN(c)
		}
		x, err := tensor.FromSlice(randUnit(r, b, c), b, c).To(dev)
		if err != nil {
			t.Fatal(err)
		}
		v := autograd.NewVar(x, true)
		tp := autograd.NewTape()
		out := CrossEntropy(tp, v, labels)
		tp.Backward(autograd.MulScalar(tp, out, 3))
		if out.Value.Device() != dev || v.Grad.Device() != dev {
			t.Fatalf("loss on %s, gradient on %s, want %s", out.Value.Device(), v.Grad.Device(), dev)
		}
		return [][]float32{toHost(t, out.Value), toHost(t, v.Grad)}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := run(t, tensor.CPU, tc.b, tc.c)
			got := run(t, hostless.FusedDevice, tc.b, tc.c)
			for i := range want {
				if !bitsEqual(got[i], want[i]) {
					t.Errorf("%s: result %d differs from the CPU's bits by %g", hostless.FusedName, i, relDiff(got[i], want[i]))
				}
			}
			got = run(t, hostless.Device, tc.b, tc.c)
			for i := range want {
				if dd := relDiff(got[i], want[i]); dd > composedTol {
					t.Errorf("%s: result %d differs from the CPU by %g, want <= %g", hostless.Name, i, dd, composedTol)
				}
			}
		})
	}
}

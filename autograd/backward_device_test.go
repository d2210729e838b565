package autograd_test

import (
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

func hostTensor(t *testing.T, x *tensor.Tensor) []float32 { t.Helper(); return hostless.HostData(t, x) }

var (
	sameBits = hostless.SameBits
	maxDiff  = hostless.RelDiff
)

// fallbackTol bounds the difference between a fallback composed of core
// backend operations (on "hostless") and the CPU's capability,
// |got - want| <= fallbackTol·(1 + |want|): the fallbacks round every step
// to float32 where the CPU kernels keep float64 sums (softmax, log-softmax,
// L2 normalisation, cross-entropy) or round p·x^(p-1) once (PowScalar).
// The largest difference measured by TestBackwardOnHostless is logged.
const fallbackTol = 1e-5

// TestBackwardOnHostless runs the unary ops, Max, the row ops and
// CrossEntropy forward and backward on "hostlessfused" (the backend's
// capabilities, delegated to the CPU kernels) and "hostless" (the core
// Backend only: autograd's fallbacks), and compares the output and the
// input's gradient with the CPU's: bit for bit on hostlessfused; on
// hostless bit for bit where the fallback does the kernel's float32
// operations (exact), equal as numbers where it differs only in the sign
// of zero gradients (Abs, ReLU at 0), else within fallbackTol.
func TestBackwardOnHostless(t *testing.T) {
	r := rng(91)
	// withZeros puts exact zeros into every third element (the kinks of
	// Abs and ReLU).
	withZeros := func(x *tensor.Tensor) *tensor.Tensor {
		d := x.Data()
		for i := 0; i < len(d); i += 3 {
			d[i] = 0
		}
		return x
	}
	targets := []int{3, 0, 6, 6, 1, 2, 5}
	type fn = func(tp *ag.Tape, x *ag.Var) *ag.Var
	unary := func(f func(*ag.Tape, *ag.Var) *ag.Var) fn { return f }
	tests := []struct {
		name  string
		f     fn
		in    *tensor.Tensor
		exact bool // the fallback gives the CPU's bits
		zeros bool // the fallback may differ only in the sign of zeros
	}{
		{"Square", unary(ag.Square), tensor.RandN(r, 7, 13), true, false},
		{"Exp", unary(ag.Exp), tensor.RandN(r, 7, 13), true, false},
		{"Log", unary(ag.Log), uniform(r, 0.1, 3, 7, 13), true, false},
		{"Sqrt", unary(ag.Sqrt), uniform(r, 0.1, 3, 5, 3, 3), true, false},
		{"Sigmoid", unary(ag.Sigmoid), tensor.RandN(r, 7, 13), true, false},
		{"Tanh", unary(ag.Tanh), tensor.RandN(r, 7, 13), true, false},
		{"Abs", unary(ag.Abs), withZeros(tensor.RandN(r, 7, 13)), false, true},
		{"ReLU", unary(ag.ReLU), withZeros(tensor.RandN(r, 7, 13)), false, true},
		{"PowScalar", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.PowScalar(tp, x, 1.7) }, uniform(r, 0.1, 3, 7, 13), false, false},
		{"Large", unary(ag.Tanh), tensor.RandN(r, 300, 129), true, false},
		{"MaxLast", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.Max(tp, x, 1, false) }, distinct(r, 7, 13), true, false},
		{"MaxMiddleKeep", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.Max(tp, x, 1, true) }, distinct(r, 3, 5, 4), true, false},
		{"SoftmaxLast", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.Softmax(tp, x, -1) }, tensor.RandN(r, 7, 13), false, false},
		{"SoftmaxMiddle", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.Softmax(tp, x, 1) }, tensor.RandN(r, 3, 5, 4), false, false},
		{"LogSoftmaxLast", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.LogSoftmax(tp, x, 1) }, tensor.RandN(r, 7, 13), false, false},
		{"LogSoftmaxFirst", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.LogSoftmax(tp, x, 0) }, tensor.RandN(r, 5, 3, 2), false, false},
		{"LogSoftmaxLarge", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.LogSoftmax(tp, x, 1) }, tensor.RandN(r, 64, 1001), false, false},
		{"L2NormalizeLast", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.L2Normalize(tp, x, 1) }, tensor.RandN(r, 7, 13), false, false},
		{"L2NormalizeMiddle", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.L2Normalize(tp, x, 1) }, tensor.RandN(r, 3, 5, 4), false, false},
		{"L2NormalizeTiny", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.L2Normalize(tp, x, 1) }, uniform(r, -1e-14, 1e-14, 3, 5), false, false},
		{"CrossEntropy", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.CrossEntropy(tp, x, targets) }, tensor.RandN(r, 7, 9), false, false},
		{"CrossEntropyOneClass", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.CrossEntropy(tp, x, make([]int, 3)) }, tensor.RandN(r, 3, 1), false, false},
		{"EmptyUnary", unary(ag.Exp), tensor.New(0, 5), true, false},
		{"EmptyRows", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.Softmax(tp, x, 1) }, tensor.New(0, 5), true, false},
		{"EmptyLanes", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.LogSoftmax(tp, x, 1) }, tensor.New(4, 0), true, false},
		{"EmptyMax", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.Max(tp, x, 1, false) }, tensor.New(0, 5), true, false},
		{"EmptyCrossEntropy", func(tp *ag.Tape, x *ag.Var) *ag.Var { return ag.CrossEntropy(tp, x, nil) }, tensor.New(0, 5), false, false},
	}
	// run computes f on dev and returns the output and x's gradient of
	// Σ w·f(x) with w = 1.5 + 0.25·(element index mod 5), on the host.
	run := func(t *testing.T, dev tensor.Device, f fn, in *tensor.Tensor) (y, g []float32) {
		t.Helper()
		v, err := in.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		x := ag.Param(v, "x")
		tp := ag.NewTape()
		out := f(tp, x)
		w := tensor.New(out.Value.Shape()...)
		for i := range w.Data() {
			w.Data()[i] = 1.5 + 0.25*float32(i%5)
		}
		wd, err := w.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		tp.Backward(ag.SumAll(tp, ag.Mul(tp, out, ag.Const(wd))))
		if out.Value.Device() != dev {
			t.Fatalf("output on %s, want %s", out.Value.Device(), dev)
		}
		if x.Grad == nil || x.Grad.Device() != dev {
			t.Fatalf("gradient %v, want a tensor on %s", x.Grad, dev)
		}
		return hostTensor(t, out.Value), hostTensor(t, x.Grad)
	}
	var worst float64
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wy, wg := run(t, tensor.CPU, tc.f, tc.in)
			fy, fg := run(t, hostless.FusedDevice, tc.f, tc.in)
			if !sameBits(fy, wy) || !sameBits(fg, wg) {
				t.Errorf("%s: output or gradient differs from the CPU's bits (output %g, gradient %g)",
					hostless.FusedName, maxDiff(fy, wy), maxDiff(fg, wg))
			}
			hy, hg := run(t, hostless.Device, tc.f, tc.in)
			dy, dg := maxDiff(hy, wy), maxDiff(hg, wg)
			switch {
			case tc.exact:
				if !sameBits(hy, wy) || !sameBits(hg, wg) {
					t.Errorf("%s: fallback differs from the CPU's bits (output %g, gradient %g)", hostless.Name, dy, dg)
				}
			case tc.zeros:
				if dy != 0 || dg != 0 {
					t.Errorf("%s: fallback differs from the CPU (output %g, gradient %g), want equal values", hostless.Name, dy, dg)
				}
			default:
				if dy > fallbackTol || dg > fallbackTol {
					t.Errorf("%s: fallback differs from the CPU by %g (output) and %g (gradient), want <= %g", hostless.Name, dy, dg, fallbackTol)
				}
			}
			worst = max(worst, dy, dg)
			t.Logf("fallback: output %.3g, gradient %.3g", dy, dg)
		})
	}
	t.Logf("largest fallback difference: %.3g (relative to 1+|value|)", worst)
}

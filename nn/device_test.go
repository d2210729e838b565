package nn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

func hostData(t *testing.T, x *tensor.Tensor) []float32 { t.Helper(); return hostless.HostData(t, x) }

var (
	sameBits = hostless.SameBits
	relDiff  = hostless.RelDiff
)

// layerFallbackTol bounds |hostless - cpu| / (1 + |cpu|) for the layers on
// "hostless", the core Backend only: Linear's GEMMs and bias add are the
// CPU's operations (the same bits); its bias gradient is summed by
// Backend.Reduce where kernels/linear adds row after row in float32, a
// few float32 ulps apart on the sizes below. The largest difference
// measured is logged.
const layerFallbackTol = 1e-5

// TestLayersOnHostless runs each simple layer forward and backward on the
// CPU, on "hostlessfused" (the backend's capabilities delegated to the CPU
// kernels: the CPU's bits) and on "hostless" (the core Backend only: the
// fallbacks, within layerFallbackTol; the pooling layers need
// tensor.PoolBackend and are skipped there). The output, the input's
// gradient and every parameter's gradient are compared.
func TestLayersOnHostless(t *testing.T) {
	type fwd = func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var
	// layer builds a fresh module from a fixed seed and returns its
	// forward pass of one input.
	layer := func(mk func(r *rand.Rand) Module) func() (Module, fwd) {
		return func() (Module, fwd) {
			m := mk(rand.New(rand.NewPCG(5, 6)))
			return m, func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var { return m.Forward(tp, xs[0]) }
		}
	}
	tests := []struct {
		name   string
		build  func() (Module, fwd)
		shapes [][]int
		pool   bool // needs tensor.PoolBackend
	}{
		{"Linear", layer(func(r *rand.Rand) Module { return NewLinear(5, 3, true, r) }), [][]int{{4, 5}}, false},
		{"LinearNoBias", layer(func(r *rand.Rand) Module { return NewLinear(7, 1, false, r) }), [][]int{{1, 7}}, false},
		{"LinearOdd3d", layer(func(r *rand.Rand) Module { return NewLinear(13, 11, true, r) }), [][]int{{3, 5, 13}}, false},
		{"LinearLarge", layer(func(r *rand.Rand) Module { return NewLinear(67, 129, true, r) }), [][]int{{97, 67}}, false},
		{"LinearNoRows", layer(func(r *rand.Rand) Module { return NewLinear(3, 4, true, r) }), [][]int{{0, 3}}, false},
		{"LinearOneIn", layer(func(r *rand.Rand) Module { return NewLinear(1, 2, true, r) }), [][]int{{3, 1}}, false},
		{"ReLU", layer(func(*rand.Rand) Module { return NewReLU() }), [][]int{{3, 7}}, false},
		{"ReLU4d", layer(func(*rand.Rand) Module { return NewReLU() }), [][]int{{2, 3, 5, 5}}, false},
		{"ReLUEmpty", layer(func(*rand.Rand) Module { return NewReLU() }), [][]int{{0, 4}}, false},
		{"AddRelu", func() (Module, fwd) {
			return nil, func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var { return AddRelu(tp, xs[0], xs[1]) }
		}, [][]int{{2, 3, 3, 5}, {2, 3, 3, 5}}, false},
		{"Flatten", layer(func(*rand.Rand) Module { return NewFlatten() }), [][]int{{2, 3, 4, 5}}, false},
		{"FlattenEmpty", layer(func(*rand.Rand) Module { return NewFlatten() }), [][]int{{0, 3, 2}}, false},
		{"Identity", layer(func(*rand.Rand) Module { return NewIdentity() }), [][]int{{3, 2}}, false},
		{"Sequential", layer(func(r *rand.Rand) Module {
			return NewSequential(NewFlatten(), NewLinear(12, 9, true, r), NewReLU(), NewLinear(9, 5, false, r))
		}), [][]int{{7, 3, 2, 2}}, false},
		{"MaxPool", layer(func(*rand.Rand) Module { return NewMaxPool2d(3, 2, 1) }), [][]int{{2, 3, 7, 9}}, true},
		{"MaxPool2x2", layer(func(*rand.Rand) Module { return NewMaxPool2d(2, 2, 0) }), [][]int{{1, 1, 4, 5}}, true},
		{"MaxPoolEmpty", layer(func(*rand.Rand) Module { return NewMaxPool2d(3, 2, 1) }), [][]int{{0, 2, 5, 5}}, true},
		{"AvgPoolGlobal", layer(func(*rand.Rand) Module { return NewAdaptiveAvgPool2d(1, 1) }), [][]int{{2, 3, 5, 5}}, true},
		{"AvgPoolOdd", layer(func(*rand.Rand) Module { return NewAdaptiveAvgPool2d(2, 3) }), [][]int{{1, 2, 7, 8}}, true},
		{"AvgPoolEmpty", layer(func(*rand.Rand) Module { return NewAdaptiveAvgPool2d(1, 1) }), [][]int{{0, 3, 2, 2}}, true},
	}
	// run returns the output and the gradients (inputs, then parameters)
	// of the case on dev.
	run := func(t *testing.T, dev tensor.Device, build func() (Module, fwd), shapes [][]int) [][]float32 {
		t.Helper()
		m, f := build()
		var params []*autograd.Var
		if m != nil {
			params = Parameters(m)
		}
		for _, p := range params {
			v, err := p.Value.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			p.Value = v
		}
		r := rand.New(rand.NewPCG(7, uint64(len(shapes))))
		var xs []*autograd.Var
		for i, sh := range shapes {
			x := randTensor(r, sh...)
			d := x.Data()
			for j := i; j < len(d); j += 5 { // exact zeros: ReLU's kink
				d[j] = 0
			}
			v, err := x.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			xs = append(xs, autograd.Param(v, "x"))
		}
		tp := autograd.NewTape()
		out := f(tp, xs)
		w := tensor.New(out.Value.Shape()...)
		for i := range w.Data() {
			w.Data()[i] = 1.5 - 0.25*float32(i%7)
		}
		wd, err := w.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		tp.Backward(autograd.SumAll(tp, autograd.Mul(tp, out, autograd.Const(wd))))
		if out.Value.Device() != dev {
			t.Fatalf("output on %s, want %s", out.Value.Device(), dev)
		}
		res := [][]float32{hostData(t, out.Value)}
		for _, v := range append(xs, params...) {
			if v.Grad == nil || v.Grad.Device() != dev {
				t.Fatalf("gradient %v, want a tensor on %s", v.Grad, dev)
			}
			res = append(res, hostData(t, v.Grad))
		}
		return res
	}
	var worst float64
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := run(t, tensor.CPU, tc.build, tc.shapes)
			got := run(t, hostless.FusedDevice, tc.build, tc.shapes)
			for i := range want {
				if !sameBits(got[i], want[i]) {
					t.Errorf("%s: result %d (0: output, then gradients) differs from the CPU's bits by %g", hostless.FusedName, i, relDiff(got[i], want[i]))
				}
			}
			if tc.pool {
				t.Logf("%s: skipped: the pooling layers need tensor.PoolBackend, which %s lacks", hostless.Name, hostless.Name)
				defer func() {
					if e := recover(); e == nil || !strings.Contains(e.(string), "PoolBackend") {
						t.Errorf("%s: want a panic naming tensor.PoolBackend, got %v", hostless.Name, e)
					}
				}()
			}
			got = run(t, hostless.Device, tc.build, tc.shapes)
			for i := range want {
				d := relDiff(got[i], want[i])
				worst = max(worst, d)
				if d > layerFallbackTol {
					t.Errorf("%s: result %d differs from the CPU by %g, want <= %g", hostless.Name, i, d, layerFallbackTol)
				}
			}
		})
	}
	t.Logf("largest difference on %s: %g", hostless.Name, worst)
}

// TestLinearStridedInput checks Linear's input gradient for an input that
// is not contiguous (a transposed view, which the CPU would otherwise store
// in its own layout) against the same input made contiguous.
func TestLinearStridedInput(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	l := NewLinear(4, 3, true, r)
	base := randTensor(r, 4, 5)
	grads := make([][]float32, 2)
	for i, strided := range []bool{true, false} {
		xv := base.T()
		if !strided {
			xv = xv.Contiguous()
		}
		x := autograd.Param(xv, "x")
		tp := autograd.NewTape()
		tp.Backward(autograd.SumAll(tp, autograd.Mul(tp, l.Forward(tp, x), autograd.Const(randTensor(rand.New(rand.NewPCG(1, 1)), 5, 3)))))
		grads[i] = x.Grad.Contiguous().Data()
	}
	if !sameBits(grads[0], grads[1]) {
		t.Errorf("gradient of a transposed input %v, want %v", grads[0], grads[1])
	}
}

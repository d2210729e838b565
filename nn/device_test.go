package nn

import (
	"math"
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
// fallbacks, within layerFallbackTol; the pooling, convolution and
// BatchNorm layers need tensor.PoolBackend, tensor.ConvBackend and
// tensor.BatchNormBackend, and must panic there naming the capability).
// Parameters and buffers (the running statistics) move to the device with
// the input. The output, the input's
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
		needs  string // the capability "hostless" lacks and the layer needs, or ""
	}{
		{"Linear", layer(func(r *rand.Rand) Module { return NewLinear(5, 3, true, r) }), [][]int{{4, 5}}, ""},
		{"LinearNoBias", layer(func(r *rand.Rand) Module { return NewLinear(7, 1, false, r) }), [][]int{{1, 7}}, ""},
		{"LinearOdd3d", layer(func(r *rand.Rand) Module { return NewLinear(13, 11, true, r) }), [][]int{{3, 5, 13}}, ""},
		{"LinearLarge", layer(func(r *rand.Rand) Module { return NewLinear(67, 129, true, r) }), [][]int{{97, 67}}, ""},
		{"LinearNoRows", layer(func(r *rand.Rand) Module { return NewLinear(3, 4, true, r) }), [][]int{{0, 3}}, ""},
		{"LinearOneIn", layer(func(r *rand.Rand) Module { return NewLinear(1, 2, true, r) }), [][]int{{3, 1}}, ""},
		{"ReLU", layer(func(*rand.Rand) Module { return NewReLU() }), [][]int{{3, 7}}, ""},
		{"ReLU4d", layer(func(*rand.Rand) Module { return NewReLU() }), [][]int{{2, 3, 5, 5}}, ""},
		{"ReLUEmpty", layer(func(*rand.Rand) Module { return NewReLU() }), [][]int{{0, 4}}, ""},
		{"AddRelu", func() (Module, fwd) {
			return nil, func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var { return AddRelu(tp, xs[0], xs[1]) }
		}, [][]int{{2, 3, 3, 5}, {2, 3, 3, 5}}, ""},
		{"ReLUChannelMajor", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
			return Relu(tp, autograd.Permute(tp, xs[0], 1, 0, 2, 3)) // a CNHW view
		}), [][]int{{3, 2, 4, 5}}, ""},
		{"ReLUStrided", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
			return Relu(tp, autograd.Transpose(tp, xs[0], 2, 3)) // neither NCHW nor CNHW
		}), [][]int{{2, 3, 4, 5}}, ""},
		{"ReLUReused", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
			return autograd.Add(tp, Relu(tp, xs[0]), Relu(tp, xs[0])) // the second backward adds
		}), [][]int{{4, 3, 2, 2}}, ""},
		{"AddReluSame", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
			return AddRelu(tp, xs[0], xs[0])
		}), [][]int{{2, 3, 3, 3}}, ""},
		{"AddReluChannelMajor", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
			return AddRelu(tp, autograd.Permute(tp, xs[0], 1, 0, 2, 3), autograd.Permute(tp, xs[1], 1, 0, 2, 3))
		}), [][]int{{3, 2, 4, 4}, {3, 2, 4, 4}}, ""},
		{"AddReluMixed", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var { // b copied to a's CNHW
			return AddRelu(tp, autograd.Permute(tp, xs[0], 1, 0, 2, 3), xs[1])
		}), [][]int{{3, 2, 4, 4}, {2, 3, 4, 4}}, ""},
		{"AddReluMixedNCHW", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var { // b copied to a's NCHW
			return AddRelu(tp, xs[1], autograd.Permute(tp, xs[0], 1, 0, 2, 3))
		}), [][]int{{3, 2, 4, 4}, {2, 3, 4, 4}}, ""},
		{"AddRelu2d", fn(func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
			return AddRelu(tp, xs[0], xs[1])
		}), [][]int{{5, 7}, {5, 7}}, ""},
		{"ConvReLUArena", func() (Module, fwd) { // channel-major, buffers from a dirty arena
			m := NewSequential(NewConv2d(3, 4, 3, 1, 1, false, rand.New(rand.NewPCG(5, 6))), NewReLU())
			UseArena(m, dirtyArena(2*4*6*6))
			return m, func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var { return m.Forward(tp, xs[0]) }
		}, [][]int{{2, 3, 6, 6}}, "ConvBackend"},
		{"ConvAddReluArena", func() (Module, fwd) { // a channel-major, b NCHW
			c := NewConv2d(3, 4, 3, 1, 1, false, rand.New(rand.NewPCG(5, 6)))
			a := dirtyArena(2 * 4 * 6 * 6)
			UseArena(c, a)
			return c, func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
				return a.AddRelu(tp, c.Forward(tp, xs[0]), xs[1])
			}
		}, [][]int{{2, 3, 6, 6}, {2, 4, 6, 6}}, "ConvBackend"},
		{"Flatten", layer(func(*rand.Rand) Module { return NewFlatten() }), [][]int{{2, 3, 4, 5}}, ""},
		{"FlattenEmpty", layer(func(*rand.Rand) Module { return NewFlatten() }), [][]int{{0, 3, 2}}, ""},
		{"Identity", layer(func(*rand.Rand) Module { return NewIdentity() }), [][]int{{3, 2}}, ""},
		{"Sequential", layer(func(r *rand.Rand) Module {
			return NewSequential(NewFlatten(), NewLinear(12, 9, true, r), NewReLU(), NewLinear(9, 5, false, r))
		}), [][]int{{7, 3, 2, 2}}, ""},
		{"MaxPool", layer(func(*rand.Rand) Module { return NewMaxPool2d(3, 2, 1) }), [][]int{{2, 3, 7, 9}}, "PoolBackend"},
		{"MaxPool2x2", layer(func(*rand.Rand) Module { return NewMaxPool2d(2, 2, 0) }), [][]int{{1, 1, 4, 5}}, "PoolBackend"},
		{"MaxPoolEmpty", layer(func(*rand.Rand) Module { return NewMaxPool2d(3, 2, 1) }), [][]int{{0, 2, 5, 5}}, "PoolBackend"},
		{"AvgPoolGlobal", layer(func(*rand.Rand) Module { return NewAdaptiveAvgPool2d(1, 1) }), [][]int{{2, 3, 5, 5}}, "PoolBackend"},
		{"AvgPoolOdd", layer(func(*rand.Rand) Module { return NewAdaptiveAvgPool2d(2, 3) }), [][]int{{1, 2, 7, 8}}, "PoolBackend"},
		{"AvgPoolEmpty", layer(func(*rand.Rand) Module { return NewAdaptiveAvgPool2d(1, 1) }), [][]int{{0, 3, 2, 2}}, "PoolBackend"},
		{"Conv3x3Bias", layer(func(r *rand.Rand) Module { return NewConv2d(3, 5, 3, 1, 1, true, r) }), [][]int{{2, 3, 8, 8}}, "ConvBackend"},
		{"Conv3x3Im2col", convAlgo(AlgoIm2col, 4, 6, 3, 1), [][]int{{3, 4, 8, 8}}, "ConvBackend"},
		{"Conv3x3Winograd", convAlgo(AlgoWinograd, 4, 6, 3, 1), [][]int{{3, 4, 8, 8}}, "ConvBackend"},
		{"Conv3x3Direct", convAlgo(AlgoDirect, 4, 6, 3, 1), [][]int{{3, 4, 8, 8}}, "ConvBackend"},
		{"Conv3x3Stride2", convAlgo(AlgoAuto, 4, 6, 3, 2), [][]int{{2, 4, 9, 7}}, "ConvBackend"},
		{"Conv1x1Stride2", layer(func(r *rand.Rand) Module { return NewConv2d(4, 3, 1, 2, 0, false, r) }), [][]int{{2, 4, 6, 6}}, "ConvBackend"},
		{"Conv7x7Stem", layer(func(r *rand.Rand) Module { return NewConv2d(3, 4, 7, 2, 3, false, r) }), [][]int{{2, 3, 12, 12}}, "ConvBackend"},
		{"ConvOneImage", layer(func(r *rand.Rand) Module { return NewConv2d(2, 3, 3, 1, 1, true, r) }), [][]int{{1, 2, 4, 4}}, "ConvBackend"},
		{"ConvChain", layer(func(r *rand.Rand) Module { // the second reads a channel-major input
			return NewSequential(NewConv2d(3, 4, 3, 1, 1, false, r), NewConv2d(4, 2, 1, 1, 0, true, r), NewConv2d(2, 3, 3, 1, 1, false, r))
		}), [][]int{{2, 3, 8, 8}}, "ConvBackend"},
		{"BatchNormTrain", layer(func(*rand.Rand) Module { return NewBatchNorm2d(3) }), [][]int{{4, 3, 5, 5}}, "BatchNormBackend"},
		{"BatchNorm1d", layer(func(*rand.Rand) Module { return NewBatchNorm1d(6) }), [][]int{{5, 6}}, "BatchNormBackend"},
		{"BatchNormGhost", layer(func(*rand.Rand) Module { bn := NewBatchNorm2d(3); bn.Splits = 2; return bn }), [][]int{{4, 3, 4, 4}}, "BatchNormBackend"},
		{"BatchNormEval", layer(func(*rand.Rand) Module { return evalBN(3) }), [][]int{{2, 3, 4, 4}}, "BatchNormBackend"},
		{"ConvBatchNorm", layer(func(r *rand.Rand) Module { // channel-major BatchNorm
			bn := NewBatchNorm2d(4)
			bn.Splits = 2
			return NewSequential(NewConv2d(3, 4, 3, 1, 1, false, r), bn)
		}), [][]int{{4, 3, 8, 8}}, "ConvBackend"},
		{"BatchNormReLU", bnPair(false, false), [][]int{{4, 3, 8, 8}}, "ConvBackend"},
		{"BatchNormReLUEval", bnPair(false, true), [][]int{{4, 3, 8, 8}}, "ConvBackend"},
		{"BatchNormAddReLU", bnPair(true, false), [][]int{{4, 3, 8, 8}, {4, 4, 8, 8}}, "ConvBackend"},
		{"BatchNormAddReLUEval", bnPair(true, true), [][]int{{4, 3, 8, 8}, {4, 4, 8, 8}}, "ConvBackend"},
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
		var bufs []NamedBuffer
		if m != nil {
			bufs = NamedBuffers(m)
		}
		for _, b := range bufs {
			v, err := b.Buffer.Tensor.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			b.Buffer.Tensor = v
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
		res := [][]float32{hostData(t, out.Value.Contiguous())}
		for _, v := range append(xs, params...) {
			if v.Grad == nil || v.Grad.Device() != dev {
				t.Fatalf("gradient %v, want a tensor on %s", v.Grad, dev)
			}
			res = append(res, hostData(t, v.Grad))
		}
		for _, b := range bufs { // the running statistics, updated by the pass
			res = append(res, hostData(t, b.Buffer.Tensor))
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
			if tc.needs != "" {
				t.Logf("%s: skipped: the layer needs tensor.%s, which %s lacks", hostless.Name, tc.needs, hostless.Name)
				defer func() {
					if e := recover(); e == nil || !strings.Contains(e.(string), tc.needs) || !strings.Contains(e.(string), hostless.Name) {
						t.Errorf("%s: want a panic naming %s and tensor.%s, got %v", hostless.Name, hostless.Name, tc.needs, e)
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

// fn returns the case of a function of the inputs with no module.
func fn(f func(*autograd.Tape, []*autograd.Var) *autograd.Var) func() (Module, func(*autograd.Tape, []*autograd.Var) *autograd.Var) {
	return func() (Module, func(*autograd.Tape, []*autograd.Var) *autograd.Var) { return nil, f }
}

// dirtyArena returns an arena holding free buffers of n floats filled with
// NaN, so that a layer reading a fresh output or gradient before writing
// it shows in its results.
func dirtyArena(n int) *Arena {
	a := NewArena()
	for range 8 {
		for i, b := 0, a.get(n); i < len(b); i++ {
			b[i] = float32(math.NaN())
		}
	}
	a.Reset()
	return a
}

// convAlgo returns the case of a k x k convolution with padding 1 run by
// the algorithm al (where it applies).
func convAlgo(al ConvAlgo, in, out, k, stride int) func() (Module, func(*autograd.Tape, []*autograd.Var) *autograd.Var) {
	return func() (Module, func(*autograd.Tape, []*autograd.Var) *autograd.Var) {
		c := NewConv2d(in, out, k, stride, 1, false, rand.New(rand.NewPCG(5, 6)))
		c.Algo = al
		return c, func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var { return c.Forward(tp, xs[0]) }
	}
}

// evalBN returns a BatchNorm over c channels in evaluation mode with
// running statistics away from their initial values.
func evalBN(c int) *BatchNorm {
	bn := NewBatchNorm2d(c)
	for i := range c {
		bn.RunningMean.Tensor.Data()[i] = 0.25 * float32(i-1)
		bn.RunningVar.Tensor.Data()[i] = 0.5 + float32(i)
		bn.Weight.Value.Data()[i] = 1 - 0.3*float32(i)
		bn.Bias.Value.Data()[i] = 0.1 * float32(i)
	}
	bn.SetTraining(false)
	return bn
}

// bnPair returns the case of a convolution followed by a ghost BatchNorm
// with a fused ReLU (ForwardReLU) or, with res, residual and ReLU
// (ForwardAddReLU, the second input as the residual, stored NCHW where
// the convolution's output is channel-major), in training or evaluation
// mode.
func bnPair(res, eval bool) func() (Module, func(*autograd.Tape, []*autograd.Var) *autograd.Var) {
	return func() (Module, func(*autograd.Tape, []*autograd.Var) *autograd.Var) {
		c := NewConv2d(3, 4, 3, 1, 1, false, rand.New(rand.NewPCG(5, 6)))
		bn := NewBatchNorm2d(4)
		bn.Splits = 2
		if eval {
			bn = evalBN(4)
		}
		m := NewSequential(c, bn)
		return m, func(tp *autograd.Tape, xs []*autograd.Var) *autograd.Var {
			if res {
				return bn.ForwardAddReLU(tp, c.Forward(tp, xs[0]), xs[1])
			}
			return bn.ForwardReLU(tp, c.Forward(tp, xs[0]))
		}
	}
}

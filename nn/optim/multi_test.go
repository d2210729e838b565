package optim

import (
	"math"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// TestGroupsAdd checks how steps are gathered into multi-parameter calls:
// by device and arguments, in order of first use; none for a backend
// without multi-parameter steps or a view that is not contiguous.
func TestGroupsAdd(t *testing.T) {
	on := func(dev tensor.Device, shape ...int) *tensor.Tensor {
		x, err := tensor.Zeros(shape...).To(dev)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	var gs groups[int]
	cases := []struct {
		name string
		args int
		ts   []*tensor.Tensor
		ok   bool
	}{
		{"cpu", 1, []*tensor.Tensor{on(tensor.CPU, 3), on(tensor.CPU, 3), nil}, true},
		{"cpu, same arguments", 1, []*tensor.Tensor{on(tensor.CPU, 2, 2), on(tensor.CPU, 2, 2), on(tensor.CPU, 2, 2)}, true},
		{"cpu, other arguments", 2, []*tensor.Tensor{on(tensor.CPU, 1), on(tensor.CPU, 1), nil}, true},
		{"fused host-less device", 1, []*tensor.Tensor{on(hostless.FusedDevice, 4), on(hostless.FusedDevice, 4), nil}, true},
		{"no multi-parameter steps", 1, []*tensor.Tensor{on(hostless.Device, 4), on(hostless.Device, 4), nil}, false},
		{"a transposed view", 1, []*tensor.Tensor{on(tensor.CPU, 3), on(tensor.CPU, 2, 3).Transpose(0, 1), nil}, false},
	}
	for _, c := range cases {
		if got := gs.add(c.args, c.ts...); got != c.ok {
			t.Errorf("%s: add = %v, want %v", c.name, got, c.ok)
		}
	}
	if len(gs) != 3 {
		t.Fatalf("%d groups, want 3 (cpu 1, cpu 2, hostlessfused 1)", len(gs))
	}
	want := []struct {
		dev   tensor.Device
		args  int
		steps int
	}{{tensor.CPU, 1, 2}, {tensor.CPU, 2, 1}, {hostless.FusedDevice, 1, 1}}
	for i, w := range want {
		g := gs[i]
		if g.dev != w.dev || g.args != w.args || len(g.ops) != 3 || len(g.ops[0]) != w.steps || len(g.ops[2]) != w.steps {
			t.Errorf("group %d: device %s, arguments %d, %d operand lists of %d steps; want %s, %d, 3 lists of %d",
				i, g.dev, g.args, len(g.ops), len(g.ops[0]), w.dev, w.args, w.steps)
		}
	}
	if !tensor.IsZeroOperand(gs[0].ops[2][0]) {
		t.Error("a nil tensor's operand is not the zero Operand")
	}
}

// hostOperand returns d as a 1-d CPU operand.
func hostOperand(d []float32) tensor.Operand {
	return tensor.Operand{Buf: tensor.Buffer{Host: d}, Shape: []int{len(d)}, Strides: []int{1}}
}

// mixedSteps runs three steps of o over ps, parameter 1 without a
// gradient at the first, and after each compares the parameters with w,
// which single(ob, i, g) steps one parameter at a time with the CPU's
// fused steps ob and the same gradients, bit for bit.
func mixedSteps(t *testing.T, o Optimizer, ps []*autograd.Var, w [][]float32, single func(ob tensor.OptimizerBackend, i int, g []float32)) {
	t.Helper()
	be, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	ob := be.(tensor.OptimizerBackend)
	for step := range 3 {
		for i, p := range ps {
			p.Grad = nil
			if step == 0 && i == 1 {
				continue // no gradient: its state starts a step later
			}
			g := make([]float32, len(w[i]))
			for j := range g {
				g[j] = float32(math.Sin(float64(10*step + 3*i + j)))
			}
			p.Grad = tensor.FromSlice(append([]float32(nil), g...), len(g))
			single(ob, i, g)
		}
		o.Step()
		for i, p := range ps {
			for j, v := range p.Value.Data() {
				if math.Float32bits(v) != math.Float32bits(w[i][j]) {
					t.Fatalf("step %d, parameter %d, element %d = %v, want %v", step, i, j, v, w[i][j])
				}
			}
		}
	}
}

// TestSGDMixedFirst checks SGD with momentum over parameters whose buffers
// start at different steps: the multi-parameter calls, one per value of
// First, give the bits of the single-parameter steps.
func TestSGDMixedFirst(t *testing.T) {
	ps := []*autograd.Var{
		autograd.Param(tensor.FromSlice([]float32{1, -2, 3}, 3), "a"),
		autograd.Param(tensor.FromSlice([]float32{0.5, 0.25}, 2), "b"),
		autograd.Param(tensor.FromSlice([]float32{4}, 1), "c"),
	}
	cfg := SGDConfig{LR: 0.1, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01}
	o, err := NewSGD(ps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := [][]float32{{1, -2, 3}, {0.5, 0.25}, {4}}
	bufs := make([][]float32, 3)
	mixedSteps(t, o, ps, w, func(ob tensor.OptimizerBackend, i int, g []float32) {
		first := bufs[i] == nil
		if first {
			bufs[i] = make([]float32, len(g))
		}
		ob.SGDStep(hostOperand(w[i]), hostOperand(g), hostOperand(bufs[i]), tensor.SGDArgs{LR: cfg.LR,
			WeightDecay: cfg.WeightDecay, Momentum: cfg.Momentum, Dampening: cfg.Dampening, First: first})
	})
}

// TestAdamMixedSteps checks Adam over parameters whose step counts differ
// (the one without a gradient at the first step lags one step behind, so
// its bias corrections differ): one multi-parameter call per count, each
// parameter with the bits of its single-parameter step.
func TestAdamMixedSteps(t *testing.T) {
	ps := []*autograd.Var{
		autograd.Param(tensor.FromSlice([]float32{1, -2, 3}, 3), "a"),
		autograd.Param(tensor.FromSlice([]float32{0.5, 0.25}, 2), "b"),
	}
	cfg := AdamConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 1e-2}
	o, err := NewAdam(ps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := [][]float32{{1, -2, 3}, {0.5, 0.25}}
	m, v := [][]float32{make([]float32, 3), make([]float32, 2)}, [][]float32{make([]float32, 3), make([]float32, 2)}
	steps := make([]int64, 2)
	mixedSteps(t, o, ps, w, func(ob tensor.OptimizerBackend, i int, g []float32) {
		steps[i]++
		ob.AdamStep(hostOperand(w[i]), hostOperand(g), hostOperand(m[i]), hostOperand(v[i]), tensor.AdamArgs{LR: cfg.LR,
			Beta1: cfg.Beta1, Beta2: cfg.Beta2, Eps: cfg.Eps, WeightDecay: cfg.WeightDecay, Step: steps[i]})
	})
}

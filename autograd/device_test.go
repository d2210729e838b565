package autograd_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// TestOpsOnHostless runs the ops whose forward and backward passes are
// composed of core tensor operations on the host-less device and checks
// the output and the inputs' gradients against the CPU bit for bit, and
// that the gradients stay on the device. (TestBackwardOnHostless covers the
// ops with backend capabilities: the unary backward passes, Max, the row
// ops and CrossEntropy.)
func TestOpsOnHostless(t *testing.T) {
	r := rng(77)
	tests := []struct {
		name   string
		f      func(tp *ag.Tape, x []*ag.Var) *ag.Var
		inputs []*tensor.Tensor
	}{
		{"AddBroadcast", func(tp *ag.Tape, x []*ag.Var) *ag.Var { return ag.Add(tp, x[0], x[1]) }, ts{tensor.RandN(r, 5, 7), tensor.RandN(r, 7)}},
		{"SubMul", func(tp *ag.Tape, x []*ag.Var) *ag.Var { return ag.Mul(tp, ag.Sub(tp, x[0], x[1]), x[0]) }, ts{tensor.RandN(r, 3, 4), tensor.RandN(r, 3, 1)}},
		{"Div", func(tp *ag.Tape, x []*ag.Var) *ag.Var { return ag.Div(tp, x[0], x[1]) }, ts{tensor.RandN(r, 6, 5), awayFromZero(r, 6, 5)}},
		{"MatMul", func(tp *ag.Tape, x []*ag.Var) *ag.Var { return ag.MatMul(tp, x[0], x[1]) }, ts{tensor.RandN(r, 9, 13), tensor.RandN(r, 13, 4)}},
		{"BatchMatMul", func(tp *ag.Tape, x []*ag.Var) *ag.Var { return ag.BatchMatMul(tp, x[0], x[1]) }, ts{tensor.RandN(r, 2, 3, 5), tensor.RandN(r, 2, 5, 4)}},
		{"SumMean", func(tp *ag.Tape, x []*ag.Var) *ag.Var {
			return ag.Add(tp, ag.Sum(tp, x[0], 1, true), ag.Mean(tp, x[0], 1, true))
		}, ts{tensor.RandN(r, 4, 11)}},
		{"ConcatSliceTranspose", func(tp *ag.Tape, x []*ag.Var) *ag.Var {
			return ag.Transpose(tp, ag.Slice(tp, ag.Concat(tp, 0, x[0], x[1]), 1, 1, 4), 0, 1)
		}, ts{tensor.RandN(r, 2, 5), tensor.RandN(r, 3, 5)}},
		{"ReshapePermute", func(tp *ag.Tape, x []*ag.Var) *ag.Var {
			return ag.Permute(tp, ag.Reshape(tp, x[0], 2, 3, 4), 2, 0, 1)
		}, ts{tensor.RandN(r, 6, 4)}},
		{"Scalars", func(tp *ag.Tape, x []*ag.Var) *ag.Var {
			return ag.Neg(tp, ag.MulScalar(tp, ag.AddScalar(tp, x[0], 0.5), 3))
		}, ts{tensor.RandN(r, 8)}},
		{"Empty", func(tp *ag.Tape, x []*ag.Var) *ag.Var { return ag.Add(tp, x[0], x[0]) }, ts{tensor.New(0, 3)}},
	}
	bits := func(x *tensor.Tensor) []uint32 {
		h, err := x.To(tensor.CPU)
		if err != nil {
			t.Fatal(err)
		}
		var b []uint32
		for _, v := range h.Contiguous().Data() {
			b = append(b, math.Float32bits(v))
		}
		return b
	}
	run := func(dev tensor.Device, f func(*ag.Tape, []*ag.Var) *ag.Var, inputs []*tensor.Tensor) (*ag.Var, []*ag.Var) {
		xs := make([]*ag.Var, len(inputs))
		for i, in := range inputs {
			v, err := in.To(dev)
			if err != nil {
				t.Fatal(err)
			}
			xs[i] = ag.Param(v, fmt.Sprint(i))
		}
		tp := ag.NewTape()
		y := f(tp, xs)
		w, err := tensor.Full(0.5, y.Value.Shape()...).To(dev)
		if err != nil {
			t.Fatal(err)
		}
		tp.Backward(ag.SumAll(tp, ag.Mul(tp, y, ag.Const(w))))
		return y, xs
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wy, wx := run(tensor.CPU, tc.f, tc.inputs)
			gy, gx := run(hostless.Device, tc.f, tc.inputs)
			if gy.Value.Device() != hostless.Device || !slices.Equal(bits(gy.Value), bits(wy.Value)) {
				t.Errorf("output on %s differs from the CPU's", gy.Value.Device())
			}
			for i := range wx {
				if gx[i].Grad == nil || gx[i].Grad.Device() != hostless.Device {
					t.Fatalf("gradient of input %d: %v, want a tensor on %s", i, gx[i].Grad, hostless.Device)
				}
				if !slices.Equal(bits(gx[i].Grad), bits(wx[i].Grad)) {
					t.Errorf("gradient of input %d differs from the CPU's", i)
				}
			}
		})
	}
}

package autograd_test

import (
	"slices"
	"testing"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// TestForwardValues checks forward values and shapes of the ops whose
// forward lives in this package, against hand-computed references
// (float64, rounded).
func TestForwardValues(t *testing.T) {
	row := tensor.FromSlice([]float32{1, 2, 3}, 1, 3)
	col := tensor.FromSlice([]float32{1, 2, 3}, 3, 1)
	x := tensor.FromSlice([]float32{1, 5, 2, 4, 3, 0}, 2, 3)
	tests := []struct {
		name  string
		f     func(tp *ag.Tape) *ag.Var
		shape []int
		want  []float32
	}{
		{"Softmax", func(tp *ag.Tape) *ag.Var { return ag.Softmax(tp, ag.Const(row), 1) },
			[]int{1, 3}, []float32{0.09003057, 0.24472847, 0.66524096}},
		{"Softmax axis 0", func(tp *ag.Tape) *ag.Var { return ag.Softmax(tp, ag.Const(col), 0) },
			[]int{3, 1}, []float32{0.09003057, 0.24472847, 0.66524096}},
		{"Softmax shifted", func(tp *ag.Tape) *ag.Var {
			return ag.Softmax(tp, ag.Const(tensor.FromSlice([]float32{1001, 1002, 1003}, 3)), 0)
		}, []int{3}, []float32{0.09003057, 0.24472847, 0.66524096}},
		{"LogSoftmax", func(tp *ag.Tape) *ag.Var { return ag.LogSoftmax(tp, ag.Const(row), -1) },
			[]int{1, 3}, []float32{-2.40760596, -1.40760596, -0.40760596}},
		{"LogSoftmax size-1 axis", func(tp *ag.Tape) *ag.Var { return ag.LogSoftmax(tp, ag.Const(col), 1) },
			[]int{3, 1}, []float32{0, 0, 0}},
		{"L2Normalize", func(tp *ag.Tape) *ag.Var {
			return ag.L2Normalize(tp, ag.Const(tensor.FromSlice([]float32{3, 4, 0, 0}, 2, 2)), 1)
		}, []int{2, 2}, []float32{0.6, 0.8, 0, 0}},
		{"L2Normalize axis 0", func(tp *ag.Tape) *ag.Var {
			return ag.L2Normalize(tp, ag.Const(tensor.FromSlice([]float32{3, 0, 4, 0}, 2, 2)), 0)
		}, []int{2, 2}, []float32{0.6, 0, 0.8, 0}},
		{"Max axis 1", func(tp *ag.Tape) *ag.Var { return ag.Max(tp, ag.Const(x), 1, false) }, []int{2}, []float32{5, 4}},
		{"Max axis 0 keep", func(tp *ag.Tape) *ag.Var { return ag.Max(tp, ag.Const(x), 0, true) }, []int{1, 3}, []float32{4, 5, 2}},
		{"Sum axis -1 keep", func(tp *ag.Tape) *ag.Var { return ag.Sum(tp, ag.Const(x), -1, true) }, []int{2, 1}, []float32{8, 7}},
		{"Mean axis 0", func(tp *ag.Tape) *ag.Var { return ag.Mean(tp, ag.Const(x), 0, false) }, []int{3}, []float32{2.5, 4, 1}},
		{"SumAll", func(tp *ag.Tape) *ag.Var { return ag.SumAll(tp, ag.Const(x)) }, []int{}, []float32{15}},
		{"MeanAll", func(tp *ag.Tape) *ag.Var { return ag.MeanAll(tp, ag.Const(x)) }, []int{}, []float32{2.5}},
		{"Permute", func(tp *ag.Tape) *ag.Var { return ag.Permute(tp, ag.Const(x), 1, 0) }, []int{3, 2}, []float32{1, 4, 5, 3, 2, 0}},
		{"Slice", func(tp *ag.Tape) *ag.Var { return ag.Slice(tp, ag.Const(x), 1, 1, 3) }, []int{2, 2}, []float32{5, 2, 3, 0}},
		{"Concat", func(tp *ag.Tape) *ag.Var { return ag.Concat(tp, 1, ag.Const(x), ag.Const(col.Slice(0, 0, 2))) },
			[]int{2, 4}, []float32{1, 5, 2, 1, 4, 3, 0, 2}},
		{"Reshape", func(tp *ag.Tape) *ag.Var { return ag.Reshape(tp, ag.Const(x), 3, -1) }, []int{3, 2}, []float32{1, 5, 2, 4, 3, 0}},
		{"BatchMatMul broadcast", func(tp *ag.Tape) *ag.Var {
			a := ag.Const(tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 1, 2))
			b := ag.Const(tensor.FromSlice([]float32{1, 0, 1, 1}, 1, 2, 2))
			return ag.BatchMatMul(tp, a, b)
		}, []int{2, 1, 2}, []float32{3, 2, 7, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, tp := range []*ag.Tape{nil, ag.NewTape()} {
				y := tc.f(tp)
				if !slices.Equal(y.Shape(), tc.shape) {
					t.Fatalf("shape %v, want %v", y.Shape(), tc.shape)
				}
				wantData(t, "value", y.Value, tc.want...)
			}
		})
	}
}

// TestL2NormalizeZeroGrad pins the gradient at the zero vector to
// F.normalize's: the norm is clamped to eps, so ∂L/∂x = g / eps.
func TestL2NormalizeZeroGrad(t *testing.T) {
	x := ag.Param(tensor.New(1, 2), "x")
	tp := ag.NewTape()
	tp.BackwardWith(ag.L2Normalize(tp, x, 1), tensor.FromSlice([]float32{1e-12, -2e-12}, 1, 2))
	wantData(t, "x.Grad", x.Grad, 1, -2)
}

// TestMaxTies sends the gradient of tied maxima to the first one only.
func TestMaxTies(t *testing.T) {
	x := ag.Param(tensor.FromSlice([]float32{2, 7, 7, 1}, 1, 4), "x")
	tp := ag.NewTape()
	tp.Backward(ag.SumAll(tp, ag.Max(tp, x, 1, false)))
	wantData(t, "x.Grad", x.Grad, 0, 1, 0, 0)
}

func TestBadAxisPanics(t *testing.T) {
	x := ag.Const(tensor.New(2, 3))
	wantPanic(t, "autograd.Softmax: axis 2 out of range for 2 dimensions", func() { ag.Softmax(nil, x, 2) })
	wantPanic(t, "autograd.Sum: axis -3 out of range", func() { ag.Sum(nil, x, -3, false) })
	wantPanic(t, "autograd.MatMul: operands", func() { ag.MatMul(nil, x, ag.Const(tensor.New(3))) })
	wantPanic(t, "autograd.Concat: no inputs", func() { ag.Concat(nil, 0) })
	wantPanic(t, "autograd.CrossEntropy: target 3 of row 1 out of range for 3 classes", func() { ag.CrossEntropy(nil, x, []int{0, 3}) })
	wantPanic(t, "autograd.CrossEntropy: 1 targets for 2 rows", func() { ag.CrossEntropy(nil, x, []int{0}) })
}

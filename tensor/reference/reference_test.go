package reference

import (
	"math"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// The oracle is checked against hand-computed values; every other backend
// is checked against the oracle (tensor/backendtest).

func op(data []float32, shape, strides []int) tensor.Operand {
	return tensor.Operand{Buf: tensor.Buffer{Host: data}, Shape: shape, Strides: strides}
}

func TestGemmByHand(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6} // 2x3
	b := []float32{1, 0, 0, 1, 1, 1} // 3x2
	c := []float32{10, 20, 30, 40}
	Backend{}.Gemm(tensor.GemmArgs{M: 2, N: 2, K: 3, Alpha: 1, Beta: 0.5, A: tensor.Buffer{Host: a}, B: tensor.Buffer{Host: b},
		C: tensor.Buffer{Host: c}, LDA: 3, LDB: 2, LDC: 2, Batch: 1})
	if want := []float32{4 + 5, 5 + 10, 10 + 15, 11 + 20}; !slices.Equal(c, want) {
		t.Errorf("A@B + C/2 = %v, want %v", c, want)
	}
	// Aᵀ (3x2, stored 2x3) times a 2x1 vector.
	y3 := make([]float32, 3)
	Backend{}.Gemm(tensor.GemmArgs{TransA: true, M: 3, N: 1, K: 2, Alpha: 1, A: tensor.Buffer{Host: a}, B: tensor.Buffer{Host: []float32{1, -1}},
		C: tensor.Buffer{Host: y3}, LDA: 3, LDB: 1, LDC: 1, Batch: 1})
	if want := []float32{-3, -3, -3}; !slices.Equal(y3, want) {
		t.Errorf("Aᵀx = %v, want %v", y3, want)
	}
}

func TestReduceByHand(t *testing.T) {
	x := []float32{1, 5, 3, 4, 2, 6} // 2x3
	src := op(x, []int{2, 3}, []int{3, 1})
	tests := []struct {
		op    tensor.ReduceOp
		shape []int
		want  []float32
	}{
		{tensor.ReduceSum, []int{1, 3}, []float32{5, 7, 9}},
		{tensor.ReduceMean, []int{2, 1}, []float32{3, 4}},
		{tensor.ReduceMax, []int{1, 3}, []float32{4, 5, 6}},
		{tensor.ReduceMin, []int{1, 1}, []float32{1}},
	}
	for _, tc := range tests {
		out := make([]float32, len(tc.want))
		strides := []int{tc.shape[1], 1}
		Backend{}.Reduce(tc.op, op(out, tc.shape, strides), src)
		if !slices.Equal(out, tc.want) {
			t.Errorf("%v to %v = %v, want %v", tc.op, tc.shape, out, tc.want)
		}
	}
	var idx [3]int
	Backend{}.ArgMax(idx[:], src, 0)
	if idx != [3]int{1, 0, 1} {
		t.Errorf("ArgMax axis 0 = %v", idx)
	}
}

func TestIm2ColByHand(t *testing.T) {
	// 1x3x3 image, 2x2 kernel, stride 1, pad 0: 4 rows of 4 columns.
	img := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	col := make([]float32, 16)
	g := tensor.ConvGeom{C: 1, H: 3, W: 3, KH: 2, KW: 2, StrideH: 1, StrideW: 1}
	Backend{}.Im2Col(tensor.Buffer{Host: col}, 0, tensor.Buffer{Host: img}, 0, g)
	want := []float32{1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9}
	if !slices.Equal(col, want) {
		t.Errorf("Im2Col = %v, want %v", col, want)
	}
	back := make([]float32, 9)
	Backend{}.Col2Im(tensor.Buffer{Host: back}, 0, tensor.Buffer{Host: col}, 0, g)
	// Each pixel is counted once per window covering it.
	cover := []float32{1, 2, 1, 2, 4, 2, 1, 2, 1}
	for i := range back {
		if back[i] != img[i]*cover[i] {
			t.Errorf("Col2Im(Im2Col(x))[%d] = %v, want %v", i, back[i], img[i]*cover[i])
		}
	}
}

func TestUnaryDefinitions(t *testing.T) {
	if Unary(tensor.OpSigmoid, 0, 0) != 0.5 || Unary(tensor.OpRelu, -1, 0) != 0 || Unary(tensor.OpPowScalar, 2, 3) != 8 ||
		Unary(tensor.OpSign, -3, 0) != -1 || !math.IsNaN(Unary(tensor.OpSign, math.NaN(), 0)) {
		t.Error("unary definitions")
	}
	if Binary(tensor.OpDiv, 1, 4) != 0.25 || Binary(tensor.OpMaximum, 1, 4) != 4 || !math.IsNaN(Binary(tensor.OpMinimum, math.NaN(), 4)) {
		t.Error("binary definitions")
	}
}

package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }

// vals returns t's elements in row-major order.
func vals(t *Tensor) []float32 { return append([]float32(nil), t.Contiguous().Data()...) }

func TestBroadcastShapes(t *testing.T) {
	tests := []struct {
		a, b, want []int
		ok         bool
	}{
		{[]int{2, 3}, []int{2, 3}, []int{2, 3}, true},
		{[]int{2, 3}, []int{3}, []int{2, 3}, true},
		{[]int{2, 1}, []int{1, 3}, []int{2, 3}, true},
		{[]int{}, []int{4, 5}, []int{4, 5}, true},
		{[]int{5, 1, 4}, []int{3, 1}, []int{5, 3, 4}, true},
		{[]int{0, 3}, []int{1, 3}, []int{0, 3}, true},
		{[]int{0}, []int{1}, []int{0}, true},
		{[]int{2, 3}, []int{2}, nil, false},
		{[]int{0}, []int{2}, nil, false},
	}
	for _, tc := range tests {
		got, err := BroadcastShapes(tc.a, tc.b)
		if (err == nil) != tc.ok || (tc.ok && !slices.Equal(got, tc.want)) {
			t.Errorf("BroadcastShapes(%v, %v) = %v, %v; want %v ok=%v", tc.a, tc.b, got, err, tc.want, tc.ok)
		}
	}
}

func TestBinaryBroadcast(t *testing.T) {
	a := FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	tests := []struct {
		name string
		got  *Tensor
		want []float32
		dims []int
	}{
		{"row", Add(a, FromSlice([]float32{10, 20, 30}, 3)), []float32{11, 22, 33, 14, 25, 36}, []int{2, 3}},
		{"col", Sub(a, FromSlice([]float32{1, 2}, 2, 1)), []float32{0, 1, 2, 2, 3, 4}, []int{2, 3}},
		{"scalar", Mul(Scalar(2), a), []float32{2, 4, 6, 8, 10, 12}, []int{2, 3}},
		{"outer", Mul(FromSlice([]float32{1, 2}, 2, 1), FromSlice([]float32{1, 10, 100}, 1, 3)), []float32{1, 10, 100, 2, 20, 200}, []int{2, 3}},
		{"transposed", Add(a.T(), a.T()), []float32{2, 8, 4, 10, 6, 12}, []int{3, 2}},
		{"div", Div(a, Full(2, 2, 3)), []float32{0.5, 1, 1.5, 2, 2.5, 3}, []int{2, 3}},
		{"maximum", Maximum(a, Scalar(3.5)), []float32{3.5, 3.5, 3.5, 4, 5, 6}, []int{2, 3}},
		{"minimum", Minimum(a, Scalar(3.5)), []float32{1, 2, 3, 3.5, 3.5, 3.5}, []int{2, 3}},
		{"empty", Add(New(0, 3), Ones(3)), []float32{}, []int{0, 3}},
		{"slice", Add(a.Slice(1, 1, 3), a.Slice(1, 0, 2)), []float32{3, 5, 9, 11}, []int{2, 2}},
	}
	for _, tc := range tests {
		if !slices.Equal(tc.got.Shape(), tc.dims) || !slices.Equal(vals(tc.got), tc.want) {
			t.Errorf("%s: got %v, want shape %v values %v", tc.name, tc.got, tc.dims, tc.want)
		}
	}
}

func TestBinaryBadShapesPanic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Add of (2,3) and (2) did not panic")
		}
	}()
	Add(New(2, 3), New(2))
}

func TestIntoAndInPlace(t *testing.T) {
	a := FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	dst := New(2, 2)
	AddInto(dst, a, a.T())
	if want := []float32{2, 5, 5, 8}; !slices.Equal(vals(dst), want) {
		t.Errorf("AddInto = %v, want %v", vals(dst), want)
	}
	MulInto(dst, dst, Scalar(2)) // in place
	if want := []float32{4, 10, 10, 16}; !slices.Equal(vals(dst), want) {
		t.Errorf("MulInto in place = %v, want %v", vals(dst), want)
	}
	SubInto(dst, dst, a)
	DivInto(dst, dst, Full(2, 2))
	if want := []float32{1.5, 4, 3.5, 6}; !slices.Equal(vals(dst), want) {
		t.Errorf("SubInto/DivInto = %v, want %v", vals(dst), want)
	}
	dst.AddScaledInPlace(-2, a)
	if want := []float32{-0.5, 0, -2.5, -2}; !slices.Equal(vals(dst), want) {
		t.Errorf("AddScaledInPlace = %v, want %v", vals(dst), want)
	}
	dst.ScaleInPlace(2)
	if want := []float32{-1, 0, -5, -4}; !slices.Equal(vals(dst), want) {
		t.Errorf("ScaleInPlace = %v, want %v", vals(dst), want)
	}
	col := dst.Slice(1, 1, 2)
	col.Fill(7)
	if want := []float32{-1, 7, -5, 7}; !slices.Equal(vals(dst), want) {
		t.Errorf("Fill of a column view = %v, want %v", vals(dst), want)
	}
	CopyInto(dst, a.T())
	if want := []float32{1, 3, 2, 4}; !slices.Equal(vals(dst), want) {
		t.Errorf("CopyInto transposed = %v, want %v", vals(dst), want)
	}
	CopyInto(dst, FromSlice([]float32{5, 6}, 2))
	if want := []float32{5, 6, 5, 6}; !slices.Equal(vals(dst), want) {
		t.Errorf("CopyInto broadcast = %v, want %v", vals(dst), want)
	}
	dst.Zero()
	if SumAll(Abs(dst)) != 0 {
		t.Errorf("Zero left %v", dst)
	}
}

func TestUnary(t *testing.T) {
	x := FromSlice([]float32{-2, -0.5, 0, 1, 4}, 5)
	tests := []struct {
		name string
		got  *Tensor
		f    func(float64) float64
	}{
		{"Neg", Neg(x), func(v float64) float64 { return -v }},
		{"Exp", Exp(x), math.Exp},
		{"Abs", Abs(x), math.Abs},
		{"Relu", Relu(x), func(v float64) float64 { return math.Max(v, 0) }},
		{"Tanh", Tanh(x), math.Tanh},
		{"Sigmoid", Sigmoid(x), func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }},
		{"Square", Square(x), func(v float64) float64 { return v * v }},
		{"Sign", Sign(x), func(v float64) float64 {
			if v == 0 {
				return 0
			}
			return math.Copysign(1, v)
		}},
		{"AddScalar", AddScalar(x, 3), func(v float64) float64 { return v + 3 }},
		{"MulScalar", MulScalar(x, -2), func(v float64) float64 { return v * -2 }},
		{"PowScalar3", PowScalar(x, 3), func(v float64) float64 { return v * v * v }},
		{"Map", Map(x, func(v float32) float32 { return v + 1 }), func(v float64) float64 { return v + 1 }},
		{"Log", Log(Abs(AddScalar(x, 3))), func(v float64) float64 { return math.Log(math.Abs(v + 3)) }},
		{"Sqrt", Sqrt(Abs(x)), func(v float64) float64 { return math.Sqrt(math.Abs(v)) }},
	}
	for _, tc := range tests {
		for i, v := range vals(tc.got) {
			want := tc.f(float64(x.At(i)))
			if math.Abs(float64(v)-want) > 1e-6*(1+math.Abs(want)) {
				t.Errorf("%s(%v) = %v, want %v", tc.name, x.At(i), v, want)
			}
		}
	}
}

func TestReductions(t *testing.T) {
	a := FromSlice([]float32{1, 5, 3, 4, 2, 6}, 2, 3)
	tests := []struct {
		name string
		got  *Tensor
		dims []int
		want []float32
	}{
		{"Sum0", Sum(a, 0, false), []int{3}, []float32{5, 7, 9}},
		{"Sum1keep", Sum(a, 1, true), []int{2, 1}, []float32{9, 12}},
		{"SumNeg", Sum(a, -1, false), []int{2}, []float32{9, 12}},
		{"Mean1", Mean(a, 1, false), []int{2}, []float32{3, 4}},
		{"Max0", Max(a, 0, false), []int{3}, []float32{4, 5, 6}},
		{"Min1", Min(a, 1, true), []int{2, 1}, []float32{1, 2}},
		{"SumT", Sum(a.T(), 1, false), []int{3}, []float32{5, 7, 9}},
		{"SumEmpty", Sum(New(0, 3), 0, false), []int{3}, []float32{0, 0, 0}},
		{"SumOfEmpty", Sum(New(3, 0), 0, false), []int{0}, []float32{}},
		{"Sum1d", Sum(Arange(5), 0, false), []int{}, []float32{10}},
		{"SumTo", SumTo(a, []int{3}), []int{3}, []float32{5, 7, 9}},
		{"SumToCol", SumTo(a, []int{2, 1}), []int{2, 1}, []float32{9, 12}},
		{"SumToScalar", SumTo(a, []int{}), []int{}, []float32{21}},
		{"SumToSame", SumTo(a, []int{2, 3}), []int{2, 3}, []float32{1, 5, 3, 4, 2, 6}},
		{"SumTo3d", SumTo(Ones(4, 2, 3), []int{1, 3}), []int{1, 3}, []float32{8, 8, 8}},
	}
	for _, tc := range tests {
		if !slices.Equal(tc.got.Shape(), tc.dims) || !slices.Equal(vals(tc.got), tc.want) {
			t.Errorf("%s: got %v (shape %v), want shape %v values %v", tc.name, tc.got, tc.got.Shape(), tc.dims, tc.want)
		}
	}
	if got := ArgMax(a, 1); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("ArgMax axis 1 = %v", got)
	}
	if got := ArgMax(a, 0); !slices.Equal(got, []int{1, 0, 1}) {
		t.Errorf("ArgMax axis 0 = %v", got)
	}
	if got := ArgMax(New(0, 4), 1); len(got) != 0 {
		t.Errorf("ArgMax of empty = %v", got)
	}
	if got := SumAll(a); got != 21 {
		t.Errorf("SumAll = %v", got)
	}
	big := Full(1, 3, 1001)
	big.Set(1e8, 0, 0)
	if got := SumAll(big.T()); got != 1e8+3002 {
		t.Errorf("SumAll of a transposed view = %v, want exactly %v", got, 1e8+3002)
	}
	if got := MeanAll(a.T()); got != 3.5 {
		t.Errorf("MeanAll = %v", got)
	}
	if got := Max(New(0, 2), 0, false).At(1); !math.IsInf(float64(got), -1) {
		t.Errorf("Max of empty axis = %v, want -Inf", got)
	}
}

func TestSumAccuracy(t *testing.T) {
	// 1e8 followed by 1000 ones: float32 accumulation would stay at 1e8.
	x := Ones(1001)
	x.Set(1e8, 0)
	const want = 100001000 // exactly representable in float32
	if got := SumAll(x); got != want {
		t.Errorf("SumAll = %v, want %v", got, want)
	}
	if got := Sum(x.Reshape(1, -1), 1, false).At(0); got != want {
		t.Errorf("Sum last axis = %v, want %v", got, want)
	}
	if got := Sum(x.Reshape(-1, 1), 0, false).At(0); got != want {
		t.Errorf("Sum axis 0 = %v, want %v", got, want)
	}
}

func TestExpandAndViews(t *testing.T) {
	a := FromSlice([]float32{1, 2, 3}, 3, 1)
	e := a.Expand(2, 3, 4)
	if !slices.Equal(e.Shape(), []int{2, 3, 4}) || !slices.Equal(e.Strides(), []int{0, 1, 0}) {
		t.Fatalf("Expand: shape %v strides %v", e.Shape(), e.Strides())
	}
	if got := SumAll(e); got != 48 {
		t.Errorf("sum of expanded = %v, want 48", got)
	}
	if got := a.Expand(-1, 2); !slices.Equal(got.Shape(), []int{3, 2}) {
		t.Errorf("Expand(-1, 2) shape %v", got.Shape())
	}
	// Permute + slice + reshape of a non-contiguous view.
	x := Arange(24).Reshape(2, 3, 4)
	p := x.Permute(2, 0, 1).Slice(0, 1, 3) // (2,2,3)
	want := []float32{1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22}
	if got := vals(p.Reshape(4, 3)); !slices.Equal(got, want) {
		t.Errorf("permute/slice/reshape = %v, want %v", got, want)
	}
	if got := vals(Add(p, Scalar(0))); !slices.Equal(got, want) {
		t.Errorf("Add on permuted view = %v, want %v", got, want)
	}
}

func TestConcatStack(t *testing.T) {
	a := FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	b := FromSlice([]float32{5, 6}, 2, 1)
	if got := Concat(1, a, b); !slices.Equal(got.Shape(), []int{2, 3}) || !slices.Equal(vals(got), []float32{1, 2, 5, 3, 4, 6}) {
		t.Errorf("Concat axis 1 = %v", got)
	}
	if got := Concat(0, a, a.T()); !slices.Equal(vals(got), []float32{1, 2, 3, 4, 1, 3, 2, 4}) {
		t.Errorf("Concat axis 0 = %v", got)
	}
	if got := Stack(0, a, a); !slices.Equal(got.Shape(), []int{2, 2, 2}) || !slices.Equal(vals(got), []float32{1, 2, 3, 4, 1, 2, 3, 4}) {
		t.Errorf("Stack 0 = %v", got)
	}
	if got := Stack(-1, a, MulScalar(a, 10)); !slices.Equal(got.Shape(), []int{2, 2, 2}) || !slices.Equal(vals(got), []float32{1, 10, 2, 20, 3, 30, 4, 40}) {
		t.Errorf("Stack -1 = %v", got)
	}
}

// naiveMatMul is the float64 triple loop over views.
func naiveMatMul(a, b *Tensor) *Tensor {
	m, k, n := a.Dim(0), a.Dim(1), b.Dim(1)
	out := New(m, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				s += float64(a.At(i, p)) * float64(b.At(p, j))
			}
			out.Set(float32(s), i, j)
		}
	}
	return out
}

func TestMatMulViews(t *testing.T) {
	r := rng(3)
	for _, sz := range [][3]int{{0, 3, 4}, {3, 0, 4}, {1, 1, 1}, {5, 7, 3}, {17, 33, 9}, {64, 1, 31}, {1, 40, 1}} {
		m, k, n := sz[0], sz[1], sz[2]
		for _, tc := range []struct {
			name string
			a, b *Tensor
		}{
			{"NN", RandN(r, m, k), RandN(r, k, n)},
			{"TN", RandN(r, k, m).T(), RandN(r, k, n)},
			{"NT", RandN(r, m, k), RandN(r, n, k).T()},
			{"TT", RandN(r, k, m).T(), RandN(r, n, k).T()},
			{"sliced", RandN(r, m, k+3).Slice(1, 1, k+1), RandN(r, k+2, n).Slice(0, 2, k+2)},
			{"permuted3d", RandN(r, k, 2, m).Permute(1, 2, 0).Slice(0, 1, 2).Reshape(m, k), RandN(r, k, n)},
			{"expanded", RandN(r, 1, k).Expand(m, k), RandN(r, k, n)},
		} {
			want := naiveMatMul(tc.a, tc.b)
			got := MatMul(tc.a, tc.b)
			if d := MaxAbsDiff(got, want); d > 1e-4 {
				t.Errorf("MatMul %s %v: max diff %v", tc.name, sz, d)
			}
			// Into a transposed destination with beta.
			c := RandN(r, n, m)
			wantC := Add(want, MulScalar(c.T(), 0.5))
			MatMulInto(c.T(), tc.a, tc.b, 0.5)
			if d := MaxAbsDiff(c.T(), wantC); d > 1e-4 {
				t.Errorf("MatMulInto transposed dst %s %v: max diff %v", tc.name, sz, d)
			}
		}
	}
}

func TestBatchMatMul(t *testing.T) {
	r := rng(4)
	a := RandN(r, 3, 4, 5)
	b := RandN(r, 3, 5, 2)
	got := BatchMatMul(a, b)
	bt := RandN(r, 3, 2, 5).Transpose(1, 2) // transposed views per batch
	gotT := BatchMatMul(a, bt)
	w := RandN(r, 5, 2) // 2-d broadcasts
	gotW := BatchMatMul(a, w)
	for i := 0; i < 3; i++ {
		ai := a.Slice(0, i, i+1).Reshape(4, 5)
		if d := MaxAbsDiff(got.Slice(0, i, i+1).Reshape(4, 2), naiveMatMul(ai, b.Slice(0, i, i+1).Reshape(5, 2))); d > 1e-5 {
			t.Errorf("batch %d: diff %v", i, d)
		}
		if d := MaxAbsDiff(gotT.Slice(0, i, i+1).Reshape(4, 2), naiveMatMul(ai, bt.Slice(0, i, i+1).Reshape(5, 2))); d > 1e-5 {
			t.Errorf("transposed batch %d: diff %v", i, d)
		}
		if d := MaxAbsDiff(gotW.Slice(0, i, i+1).Reshape(4, 2), naiveMatMul(ai, w)); d > 1e-5 {
			t.Errorf("broadcast batch %d: diff %v", i, d)
		}
	}
	// Into a strided destination with beta, one operand broadcast.
	dst := RandN(r, 3, 4, 6).Slice(2, 1, 3)
	want := Add(BatchMatMul(a, w), MulScalar(dst, 2))
	BatchMatMulInto(dst, a, w.Reshape(1, 5, 2), 2)
	if d := MaxAbsDiff(dst, want); d > 1e-5 {
		t.Errorf("BatchMatMulInto: diff %v", d)
	}
	if got := BatchMatMul(New(0, 2, 3), New(1, 3, 4)); !slices.Equal(got.Shape(), []int{0, 2, 4}) {
		t.Errorf("empty batch shape %v", got.Shape())
	}
}

func TestIm2ColConv(t *testing.T) {
	// A 3x3 convolution as GEMM equals the direct sum.
	r := rng(5)
	c, h, w, f := 2, 5, 6, 3
	x := RandN(r, c, h, w)
	k := RandN(r, f, c, 3, 3)
	oh, ow := ConvOutSize(h, 3, 2, 1), ConvOutSize(w, 3, 2, 1)
	col := make([]float32, c*9*oh*ow)
	im2col(col, x.Data(), ConvGeom{C: c, H: h, W: w, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
	y := MatMul(k.Reshape(f, c*9), FromSlice(col, c*9, oh*ow))
	for o := 0; o < f; o++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				s := 0.0
				for ci := 0; ci < c; ci++ {
					for a := 0; a < 3; a++ {
						for b := 0; b < 3; b++ {
							yy, xx := i*2+a-1, j*2+b-1
							if yy >= 0 && yy < h && xx >= 0 && xx < w {
								s += float64(x.At(ci, yy, xx)) * float64(k.At(o, ci, a, b))
							}
						}
					}
				}
				if got := y.At(o, i*ow+j); math.Abs(float64(got)-s) > 1e-4 {
					t.Errorf("conv[%d,%d,%d] = %v, want %v", o, i, j, got, s)
				}
			}
		}
	}
	if ConvOutSize(2, 5, 1, 1) != 0 || ConvOutSize(32, 3, 1, 1) != 32 || ConvOutSize(32, 2, 2, 0) != 16 {
		t.Error("ConvOutSize")
	}
}

func TestHelpers(t *testing.T) {
	if got := vals(Eye(3)); !slices.Equal(got, []float32{1, 0, 0, 0, 1, 0, 0, 0, 1}) {
		t.Errorf("Eye = %v", got)
	}
	u := RandU(rng(1), -2, 3, 1000)
	if Min(u, 0, false).Item() < -2 || Max(u, 0, false).Item() >= 3 {
		t.Errorf("RandU out of range")
	}
	if !AllClose(Ones(2), FromSlice([]float32{1, 1 + 1e-7}, 2), 1e-6, 0) || AllClose(Ones(2), Ones(3), 1, 1) {
		t.Error("AllClose")
	}
	if AllClose(FromSlice([]float32{float32(math.NaN())}, 1), FromSlice([]float32{float32(math.NaN())}, 1), 1, 1) {
		t.Error("AllClose(NaN, NaN)")
	}
	if d := MaxAbsDiff(Ones(2, 2), Full(3, 2, 2).T()); d != 2 {
		t.Errorf("MaxAbsDiff = %v", d)
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("Lookup of unknown backend succeeded")
	}
	if got, err := Ones(2).To(CPU); err != nil || got.Numel() != 2 {
		t.Errorf("To(CPU) = %v, %v", got, err)
	}
	if _, err := Ones(2).To("cuda:0"); err == nil {
		t.Error("To(cuda:0) without a CUDA backend succeeded")
	}
}

func TestSqueezeUnsqueeze(t *testing.T) {
	x := Arange(6).Reshape(2, 3)
	tests := []struct {
		got        *Tensor
		shape, str []int
	}{
		{x.Unsqueeze(0), []int{1, 2, 3}, []int{6, 3, 1}},
		{x.Unsqueeze(1), []int{2, 1, 3}, []int{3, 3, 1}},
		{x.Unsqueeze(-1), []int{2, 3, 1}, []int{3, 1, 1}},
		{x.T().Unsqueeze(2), []int{3, 2, 1}, []int{1, 3, 1}},
		{x.Unsqueeze(1).Squeeze(1), []int{2, 3}, []int{3, 1}},
		{x.Unsqueeze(2).Squeeze(-1), []int{2, 3}, []int{3, 1}},
	}
	for i, tc := range tests {
		if !slices.Equal(tc.got.Shape(), tc.shape) || !slices.Equal(tc.got.Strides(), tc.str) {
			t.Errorf("case %d: shape %v strides %v, want %v %v", i, tc.got.Shape(), tc.got.Strides(), tc.shape, tc.str)
		}
		if !slices.Equal(vals(tc.got), vals(x.Reshape(tc.shape...))) && i < 3 {
			t.Errorf("case %d: values changed", i)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Squeeze of a size-3 axis did not panic")
		}
	}()
	x.Squeeze(1)
}

// TestPanics checks that shape errors panic with a message naming the
// operation (the package's contract for programming errors).
func TestPanics(t *testing.T) {
	elsewhere := &Tensor{shape: []int{2}, strides: []int{1}, data: make([]float32, 2), device: "nowhere:0"}
	tests := []struct {
		name, want string
		f          func()
	}{
		{"Add", "tensor.Add", func() { Add(New(2, 3), New(3, 2)) }},
		{"AddInto", "tensor.AddInto", func() { AddInto(New(3), New(2, 3), New(3)) }},
		{"MatMul", "tensor.MatMul", func() { MatMul(New(2, 3), New(2, 3)) }},
		{"MatMulInto", "tensor.MatMulInto", func() { MatMulInto(New(2, 2), New(2, 3), New(3, 3), 0) }},
		{"BatchMatMul", "tensor.BatchMatMul", func() { BatchMatMul(New(2, 2, 3), New(3, 3, 2)) }},
		{"BatchMatMulInto", "tensor.BatchMatMulInto", func() { BatchMatMulInto(New(2, 2, 2), New(2, 2, 3), New(2, 3, 3), 0) }},
		{"BatchMatMulIntoT", "tensor.BatchMatMulInto", func() { BatchMatMulInto(New(1, 4, 3).Transpose(1, 2), New(1, 3, 2), New(1, 2, 4), 0) }},
		{"Sum", "tensor.Sum", func() { Sum(New(2, 3), 2, false) }},
		{"SumTo", "tensor.SumTo", func() { SumTo(New(2, 3), []int{2}) }},
		{"Expand", "tensor.Expand", func() { New(2, 3).Expand(4, 3) }},
		{"Concat", "tensor.Concat", func() { Concat(0, New(2, 3), New(2, 4)) }},
		{"Stack", "tensor.Stack", func() { Stack(0, New(2), New(3)) }},
		{"ArgMax", "tensor.ArgMax", func() { ArgMax(New(2, 0), 1) }},
		{"Device", "tensor.Add", func() { Add(New(2), elsewhere) }},
		{"Backend", "nowhere", func() { Neg(elsewhere) }},
		{"ConvOutSize", "tensor.ConvOutSize", func() { ConvOutSize(8, 3, 0, 1) }},
		{"Data", "tensor.Data", func() { New(2, 3).T().Data() }},
		{"Squeeze", "tensor.Squeeze", func() { New(2).Squeeze(0) }},
		{"Unsqueeze", "tensor.Unsqueeze", func() { New(2).Unsqueeze(3) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.Contains(msg, tc.want) {
					t.Errorf("panic %v, want a message containing %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// TestAutogradEmulated runs autograd's unary backward passes, Max and the
// row ops (softmax, log-softmax, L2 normalisation, cross-entropy) forward
// and backward on the CUDA backend (on the emulator), which implements
// tensor.UnaryGradBackend (unarygrad.cu), IndexBackend (index.cu) and
// RowsBackend (rows.cu): autograd dispatches to them, and the results must
// agree with the CPU's kernels within 1e-5 * (1 + |x|) (testRows and
// testGrads check the kernels themselves; autograd's own tests cover its
// composed fallbacks).
func TestAutogradEmulated(t *testing.T) {
	dev := emuTensorDevice(t)
	var b tensor.Backend = emuDevice{}
	if _, ok := b.(tensor.RowsBackend); !ok {
		t.Fatal("the CUDA backend does not implement tensor.RowsBackend")
	}
	if _, ok := b.(tensor.UnaryGradBackend); !ok {
		t.Fatal("the CUDA backend does not implement tensor.UnaryGradBackend")
	}
	if _, ok := b.(tensor.IndexBackend); !ok {
		t.Fatal("the CUDA backend does not implement tensor.IndexBackend")
	}
	r := rand.New(rand.NewPCG(5, 8))
	pos := tensor.Map(tensor.RandN(r, 6, 9), func(v float32) float32 { return 0.1 + float32(math.Abs(float64(v))) })
	targets := []int{0, 8, 3, 3, 5, 1}
	tests := []struct {
		name string
		f    func(tp *autograd.Tape, x *autograd.Var) *autograd.Var
		in   *tensor.Tensor
	}{
		{"Exp", autograd.Exp, tensor.RandN(r, 6, 9)},
		{"Log", autograd.Log, pos},
		{"Sqrt", autograd.Sqrt, pos},
		{"Abs", autograd.Abs, tensor.RandN(r, 6, 9)},
		{"ReLU", autograd.ReLU, tensor.RandN(r, 6, 9)},
		{"Tanh", autograd.Tanh, tensor.RandN(r, 6, 9)},
		{"Sigmoid", autograd.Sigmoid, tensor.RandN(r, 6, 9)},
		{"Square", autograd.Square, tensor.RandN(r, 6, 9)},
		{"PowScalar", func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return autograd.PowScalar(tp, x, 2.5) }, pos},
		{"Max", func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return autograd.Max(tp, x, 0, false) }, tensor.RandN(r, 6, 9)},
		{"Softmax", func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return autograd.Softmax(tp, x, 1) }, tensor.RandN(r, 6, 9)},
		{"LogSoftmax", func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return autograd.LogSoftmax(tp, x, 0) }, tensor.RandN(r, 6, 9)},
		{"L2Normalize", func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return autograd.L2Normalize(tp, x, 1) }, tensor.RandN(r, 6, 9)},
		{"CrossEntropy", func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return autograd.CrossEntropy(tp, x, targets) }, tensor.RandN(r, 6, 9)},
	}
	run := func(t *testing.T, d tensor.Device, f func(*autograd.Tape, *autograd.Var) *autograd.Var, in *tensor.Tensor) (y, g []float32) {
		v, err := in.To(d)
		if err != nil {
			t.Fatal(err)
		}
		x := autograd.Param(v, "x")
		tp := autograd.NewTape()
		out := f(tp, x)
		w := tensor.New(out.Value.Shape()...)
		for i := range w.Data() {
			w.Data()[i] = 0.5 + 0.25*float32(i%3)
		}
		wd, err := w.To(d)
		if err != nil {
			t.Fatal(err)
		}
		tp.Backward(autograd.SumAll(tp, autograd.Mul(tp, out, autograd.Const(wd))))
		if x.Grad.Device() != d {
			t.Fatalf("gradient on %s, want %s", x.Grad.Device(), d)
		}
		hy, err := out.Value.To(tensor.CPU)
		if err != nil {
			t.Fatal(err)
		}
		hg, err := x.Grad.To(tensor.CPU)
		if err != nil {
			t.Fatal(err)
		}
		return hy.Contiguous().Data(), hg.Contiguous().Data()
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wy, wg := run(t, tensor.CPU, tc.f, tc.in)
			gy, gg := run(t, dev, tc.f, tc.in)
			for _, p := range [][2][]float32{{gy, wy}, {gg, wg}} {
				if len(p[0]) != len(p[1]) {
					t.Fatalf("%d elements, want %d", len(p[0]), len(p[1]))
				}
				for i := range p[0] {
					if d := math.Abs(float64(p[0][i] - p[1][i])); !(d <= 1e-5*(1+math.Abs(float64(p[1][i])))) {
						t.Fatalf("element %d: %g, CPU %g", i, p[0][i], p[1][i])
					}
				}
			}
		})
	}
}

package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// randTensor returns a tensor of normal values.
func randTensor(r *rand.Rand, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	NormalInit(t, 1, r)
	return t
}

// checkGrad compares the gradients f's tape computes for inputs with
// central finite differences of the scalar loss sum(f(inputs) * proj),
// where proj is a fixed random tensor. f must be deterministic (BatchNorm
// running statistics may change: they do not affect the training output).
func checkGrad(t *testing.T, name string, f func(tp *autograd.Tape) *autograd.Var, inputs ...*autograd.Var) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	out := f(nil)
	proj := randTensor(r, out.Value.Shape()...).Data()
	loss := func() float64 {
		o := f(nil).Value.Contiguous().Data()
		var s float64
		for i, v := range o {
			s += float64(v) * float64(proj[i])
		}
		return s
	}
	for _, in := range inputs {
		in.Grad = nil
	}
	tp := autograd.NewTape()
	o := f(tp)
	tp.BackwardWith(o, tensor.FromSlice(append([]float32(nil), proj...), o.Value.Shape()...))
	const eps = 1e-2
	for k, in := range inputs {
		if in.Grad == nil {
			t.Fatalf("%s: input %d (%v) got no gradient", name, k, in)
		}
		g := inLayout(in.Grad, channelMajor(in.Value))
		d := storage(in.Value)
		num := make([]float64, len(d))
		var scale float64
		for i := range d {
			old := d[i]
			d[i] = old + eps
			lp := loss()
			d[i] = old - eps
			lm := loss()
			d[i] = old
			num[i] = (lp - lm) / (2 * eps)
			scale = math.Max(scale, math.Abs(num[i]))
		}
		for i := range d {
			if diff := math.Abs(float64(g[i]) - num[i]); diff > 2e-2*scale+1e-3 {
				t.Errorf("%s: input %d (%v) element %d: analytic %g, numeric %g", name, k, in, i, g[i], num[i])
				return
			}
		}
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package gradcheck_test

import (
	"fmt"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/tensor"
)

// A layer's parameters live outside the function under test: pass them in
// Options.Params so that their gradients are checked too.
func ExampleCheck() {
	w := autograd.Param(tensor.FromSlice([]float32{0.5, -1, 0.25, 2, -0.75, 1.5}, 3, 2), "weight")
	b := autograd.Param(tensor.FromSlice([]float32{0.1, -0.2}, 2), "bias")
	linearTanh := func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		return autograd.Tanh(tp, autograd.Add(tp, autograd.MatMul(tp, in[0], w), b))
	}
	x := tensor.FromSlice([]float32{1, -2, 0.5, 0.3, 0.7, -1.1, 2, 0, 1}, 3, 3)
	err := gradcheck.Check(linearTanh, []*tensor.Tensor{x}, gradcheck.Options{Params: []*autograd.Var{w, b}})
	fmt.Println("gradients match:", err == nil)

	// A wrong backward is reported with the worst element.
	badSquare := func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		x := in[0]
		return tp.Record(tensor.Square(x.Value), func(out *autograd.Var) {
			autograd.AccumulateGradOwned(x, tensor.Mul(out.Grad, x.Value)) // forgot the factor 2
		}, x)
	}
	fmt.Println(gradcheck.Check(badSquare, []*tensor.Tensor{tensor.FromSlice([]float32{1, -3}, 2)}, gradcheck.Options{}) != nil)
	// Output:
	// gradients match: true
	// true
}

// Package autograd is reverse-mode automatic differentiation on a tape.
//
// Every operation is a forward computation plus a backward closure that adds
// into its inputs' gradients (micrograd's design). Operations are recorded on
// a Tape in execution order, which is a topological order, so Backward only
// walks the tape in reverse. A nil *Tape records nothing: that is no-grad
// mode. After Backward the tape drops its nodes, releasing the graph.
//
// A variable's Grad is always contiguous and owned by that variable alone,
// so optimizers and backward closures may add into it or zero it in place;
// AccumulateGradOwned hands freshly computed gradients over without a copy.
// Matrix-shaped gradients are GEMMs (MatMul, BatchMatMul), never
// multiply+reduce. Every op is checked against float64 central differences
// with package gradcheck; docs/extending.md shows how to add one.
//
// A Tape is not safe for concurrent use; ops may use several goroutines
// internally.
package autograd

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// Var is a tensor value in a computation, with its gradient.
type Var struct {
	// Value is the forward value.
	Value *tensor.Tensor
	// Grad is the accumulated gradient of the loss with respect to Value;
	// nil until a backward pass reaches this variable. Gradients accumulate
	// across backward passes until ZeroGrad.
	Grad *tensor.Tensor
	// RequiresGrad marks variables whose gradient is wanted. Operations on
	// variables none of which require a gradient are not recorded.
	RequiresGrad bool
	// Name is an optional label used in error messages and parameter lists.
	Name string
}

// NewVar wraps a tensor as a leaf variable.
func NewVar(t *tensor.Tensor, requiresGrad bool) *Var {
	return &Var{Value: t, RequiresGrad: requiresGrad}
}

// Param wraps a tensor as a trainable leaf variable (RequiresGrad set).
func Param(t *tensor.Tensor, name string) *Var {
	return &Var{Value: t, RequiresGrad: true, Name: name}
}

// Const wraps a tensor as a leaf that never receives a gradient.
func Const(t *tensor.Tensor) *Var { return &Var{Value: t} }

// Shape returns the shape of the value.
func (v *Var) Shape() []int { return v.Value.Shape() }

// Detach returns a variable sharing v's value that stops gradients.
func (v *Var) Detach() *Var { return &Var{Value: v.Value, Name: v.Name} }

// ZeroGrad forgets the accumulated gradient.
func (v *Var) ZeroGrad() { v.Grad = nil }

// String describes the variable for error messages.
func (v *Var) String() string {
	if v.Name != "" {
		return fmt.Sprintf("%s%v", v.Name, v.Value.Shape())
	}
	return fmt.Sprintf("Var%v", v.Value.Shape())
}

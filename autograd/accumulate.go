package autograd

import (
	"fmt"
	"slices"

	"github.com/duel-ssl/duel/tensor"
)

// AccumulateGrad adds g into v.Grad when v requires a gradient, allocating
// v.Grad on first use. g must have v's shape; it may be any view (strided,
// shared with other tensors): it is read, never kept. Backward closures call
// it for gradients they do not own, such as out.Grad handed unchanged to
// two inputs.
func AccumulateGrad(v *Var, g *tensor.Tensor) {
	if !v.RequiresGrad {
		return
	}
	checkGradShape(v, g)
	if v.Grad == nil {
		v.Grad = g.Clone()
		return
	}
	addInto(v.Grad, g)
}

// AccumulateGradOwned is AccumulateGrad for a gradient the caller gives
// away: nothing else may read or write g (or storage it shares) afterwards.
// When v has no gradient yet and g is contiguous, g becomes v.Grad without a
// copy. Backward closures use it for freshly computed gradients, and for
// views of out.Grad given to a single input (out.Grad is dropped once the
// closure returns).
func AccumulateGradOwned(v *Var, g *tensor.Tensor) {
	if !v.RequiresGrad {
		return
	}
	checkGradShape(v, g)
	switch {
	case v.Grad == nil && g.IsContiguous():
		v.Grad = g
	case v.Grad == nil:
		v.Grad = g.Clone()
	default:
		addInto(v.Grad, g)
	}
}

// gradBuffer returns v.Grad, allocating it zero-filled on v's device when
// absent, so that a kernel can accumulate into it directly (for example a
// GEMM with beta 1).
func gradBuffer(v *Var) *tensor.Tensor {
	if v.Grad == nil {
		v.Grad = tensor.ZerosOn(v.Value.Device(), v.Value.Shape()...)
	}
	return v.Grad
}

func checkGradShape(v *Var, g *tensor.Tensor) {
	if !slices.Equal(v.Value.Shape(), g.Shape()) {
		panic(fmt.Sprintf("autograd: gradient of shape %v for %v", g.Shape(), v))
	}
}

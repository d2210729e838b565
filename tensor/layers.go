package tensor

import (
	"unsafe"

	"github.com/duel-ssl/duel/kernels/linear"
	"github.com/duel-ssl/duel/kernels/pool"
)

// LinearBackend is an optional capability of a Backend, discovered by type
// assertion as io.WriterTo is: the passes of a fully connected layer,
// y = x Wᵀ + b over the rows of x (package nn's Linear). Every operand is
// a dense, row-major matrix on this backend's storage: x is rows×in, W out×in,
// y and dy rows×out; b and db are vectors of out elements. A backend without it still
// runs the layer: package nn then composes each pass from Backend.Gemm,
// Backend.Binary and Backend.Reduce. The CPU backend computes them with
// package kernels/linear (kernels/gemm's GEMMs, the bias added and summed
// row by row in float32).
type LinearBackend interface {
	// LinearForward sets y = x Wᵀ, plus b on every row unless b is the
	// zero Operand.
	LinearForward(y, x, w, b Operand)
	// LinearInputGrad sets (adds, when acc) dx = dy W.
	LinearInputGrad(dx, dy, w Operand, acc bool)
	// LinearWeightGrad sets (adds, when acc) dW = dyᵀ x.
	LinearWeightGrad(dw, dy, x Operand, acc bool)
	// LinearBiasGrad adds the sum of the rows of dy into db.
	LinearBiasGrad(db, dy Operand)
}

var _ LinearBackend = cpu{}

func (c cpu) LinearForward(y, x, w, b Operand) {
	rows, out, in := y.Shape[0], y.Shape[1], x.Shape[1]
	linear.Forward(c.product(), flat("LinearForward", x), flat("LinearForward", w), flatOpt("LinearForward", b),
		flat("LinearForward", y), rows, in, out)
}

func (c cpu) LinearInputGrad(dx, dy, w Operand, acc bool) {
	rows, in := dx.Shape[0], dx.Shape[1]
	linear.InputGrad(c.product(), flat("LinearInputGrad", dx), flat("LinearInputGrad", dy), flat("LinearInputGrad", w), rows, in, w.Shape[0], acc)
}

func (c cpu) LinearWeightGrad(dw, dy, x Operand, acc bool) {
	rows, in := x.Shape[0], x.Shape[1]
	linear.WeightGrad(c.product(), flat("LinearWeightGrad", dw), flat("LinearWeightGrad", dy), flat("LinearWeightGrad", x), rows, in, dw.Shape[0], acc)
}

func (cpu) LinearBiasGrad(db, dy Operand) {
	rows, out := dy.Shape[0], dy.Shape[1]
	linear.BiasGrad(flat("LinearBiasGrad", db), flat("LinearBiasGrad", dy), rows, out)
}

// PoolGeom is the geometry of a pooling pass (kernels/pool.Geom): Planes
// input planes of H x W floats pooled to planes of OH x OW.
type PoolGeom = pool.Geom

// PoolBackend is an optional capability of a Backend: the pooling passes of
// package nn's MaxPool2d and AdaptiveAvgPool2d, forward and backward, over
// g.Planes dense planes one after the other (the order of the planes, NCHW
// or CNHW, does not matter: outputs keep it). x and dx are dense operands of
// g.Planes·H·W elements, y and dy of g.Planes·OH·OW. Max pooling counts
// padding as -inf (PyTorch's floor mode) and records in arg, a dense
// operand of g.Planes·OH·OW elements on this backend's storage (allocated
// by the caller, e.g. with Backend.Alloc), the position inside its plane of
// the element each output took, as an int32 stored in the element's bits
// (math.Float32bits of the element is the uint32 of the index): the
// indices stay on the backend between the passes, never copied to the host,
// and are meaningful only to MaxPool2dBack of the same backend. A backend
// without it cannot run the pooling layers (package nn then panics naming
// the backend). The CPU backend computes them with package kernels/pool.
type PoolBackend interface {
	// MaxPool2d sets y to the maxima of the k×k windows (stride s,
	// padding p) of x and arg to their positions.
	MaxPool2d(y, x, arg Operand, g PoolGeom, k, s, p int)
	// MaxPool2dBack sets (adds, when acc) dx: each dy goes to the input
	// element arg (MaxPool2d's, with the same window k, s, p) names, zero
	// elsewhere.
	MaxPool2dBack(dx, dy, arg Operand, g PoolGeom, k, s, p int, acc bool)
	// AdaptiveAvgPool2d sets y to the means of PyTorch's adaptive windows
	// of x: output i spans rows [⌊i·H/OH⌋, ⌈(i+1)·H/OH⌉), likewise columns.
	AdaptiveAvgPool2d(y, x Operand, g PoolGeom)
	// AdaptiveAvgPool2dBack sets (adds, when acc) dx: each dy divided by
	// its window's size goes to every element of its window.
	AdaptiveAvgPool2dBack(dx, dy Operand, g PoolGeom, acc bool)
}

var _ PoolBackend = cpu{}

func (cpu) MaxPool2d(y, x, arg Operand, g PoolGeom, k, s, p int) {
	pool.MaxForward(g, k, s, p, flat("MaxPool2d", x), flat("MaxPool2d", y), indices("MaxPool2d", arg))
}

func (cpu) MaxPool2dBack(dx, dy, arg Operand, g PoolGeom, _, _, _ int, acc bool) {
	pool.MaxBackward(g, flat("MaxPool2dBack", dx), flat("MaxPool2dBack", dy), indices("MaxPool2dBack", arg), acc)
}

// indices returns the elements of the dense host operand arg as the int32
// indices their bits hold (PoolBackend's arg): the same memory, reinterpreted.
func indices(op string, arg Operand) []int32 {
	f := flat(op, arg)
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&f[0])), len(f))
}

func (cpu) AdaptiveAvgPool2d(y, x Operand, g PoolGeom) {
	pool.AdaptiveAvgForward(g, flat("AdaptiveAvgPool2d", x), flat("AdaptiveAvgPool2d", y))
}

func (cpu) AdaptiveAvgPool2dBack(dx, dy Operand, g PoolGeom, acc bool) {
	pool.AdaptiveAvgBackward(g, flat("AdaptiveAvgPool2dBack", dx), flat("AdaptiveAvgPool2dBack", dy), acc)
}

package hostless

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// cpuCap returns the CPU backend as the capability T.
func cpuCap[T any]() T {
	c, ok := cpu().(T)
	if !ok {
		var zero T
		panic(fmt.Sprintf("hostless: the cpu backend has no %T", &zero))
	}
	return c
}

var _ tensor.UnaryGradBackend = Fused{}

// UnaryGrad runs the CPU's unary backward loop on the unwrapped handles.
func (Fused) UnaryGrad(op tensor.UnaryOp, dst, g, in tensor.Operand, p float32) {
	cpuCap[tensor.UnaryGradBackend]().UnaryGrad(op, unwrapOp("UnaryGrad", dst), unwrapOp("UnaryGrad", g), unwrapOp("UnaryGrad", in), p)
}

var _ tensor.IndexBackend = Fused{}

// TakeAlong runs the CPU's gather on the unwrapped handles.
func (Fused) TakeAlong(dst, src tensor.Operand, axis int, idx []int) {
	cpuCap[tensor.IndexBackend]().TakeAlong(unwrapOp("TakeAlong", dst), unwrapOp("TakeAlong", src), axis, idx)
}

// PutAlong runs the CPU's scatter on the unwrapped handles.
func (Fused) PutAlong(dst, src tensor.Operand, axis int, idx []int) {
	cpuCap[tensor.IndexBackend]().PutAlong(unwrapOp("PutAlong", dst), unwrapOp("PutAlong", src), axis, idx)
}

var _ tensor.RowsBackend = Fused{}

// unwrapOpt unwraps an optional operand, leaving the zero Operand.
func unwrapOpt(op string, o tensor.Operand) tensor.Operand {
	if tensor.IsZeroOperand(o) {
		return o
	}
	return unwrapOp(op, o)
}

// Softmax runs the CPU's softmax on the unwrapped handles.
func (Fused) Softmax(y, x tensor.Operand, axis int) {
	cpuCap[tensor.RowsBackend]().Softmax(unwrapOp("Softmax", y), unwrapOp("Softmax", x), axis)
}

// SoftmaxBack runs the CPU's softmax backward on the unwrapped handles.
func (Fused) SoftmaxBack(dx, g, y tensor.Operand, axis int) {
	cpuCap[tensor.RowsBackend]().SoftmaxBack(unwrapOp("SoftmaxBack", dx), unwrapOp("SoftmaxBack", g), unwrapOp("SoftmaxBack", y), axis)
}

// LogSoftmax runs the CPU's log-softmax on the unwrapped handles.
func (Fused) LogSoftmax(y, p, x tensor.Operand, axis int) {
	cpuCap[tensor.RowsBackend]().LogSoftmax(unwrapOp("LogSoftmax", y), unwrapOpt("LogSoftmax", p), unwrapOp("LogSoftmax", x), axis)
}

// LogSoftmaxBack runs the CPU's log-softmax backward on the unwrapped handles.
func (Fused) LogSoftmaxBack(dx, g, p tensor.Operand, axis int) {
	cpuCap[tensor.RowsBackend]().LogSoftmaxBack(unwrapOp("LogSoftmaxBack", dx), unwrapOp("LogSoftmaxBack", g), unwrapOp("LogSoftmaxBack", p), axis)
}

// L2Normalize runs the CPU's L2 normalisation on the unwrapped handles.
func (Fused) L2Normalize(y, x tensor.Operand, axis int, eps float64) {
	cpuCap[tensor.RowsBackend]().L2Normalize(unwrapOp("L2Normalize", y), unwrapOp("L2Normalize", x), axis, eps)
}

// L2NormalizeBack runs the CPU's L2 normalisation backward on the unwrapped handles.
func (Fused) L2NormalizeBack(dx, g, x, y tensor.Operand, axis int, eps float64) {
	cpuCap[tensor.RowsBackend]().L2NormalizeBack(unwrapOp("L2NormalizeBack", dx), unwrapOp("L2NormalizeBack", g),
		unwrapOp("L2NormalizeBack", x), unwrapOp("L2NormalizeBack", y), axis, eps)
}

// CrossEntropy runs the CPU's cross-entropy on the unwrapped handles.
func (Fused) CrossEntropy(loss, p, x tensor.Operand, targets []int) {
	cpuCap[tensor.RowsBackend]().CrossEntropy(unwrapOp("CrossEntropy", loss), unwrapOpt("CrossEntropy", p), unwrapOp("CrossEntropy", x), targets)
}

// CrossEntropyBack runs the CPU's cross-entropy backward on the unwrapped handles.
func (Fused) CrossEntropyBack(p tensor.Operand, targets []int, scale float32) {
	cpuCap[tensor.RowsBackend]().CrossEntropyBack(unwrapOp("CrossEntropyBack", p), targets, scale)
}

var _ tensor.LinearBackend = Fused{}

// LinearForward runs the CPU's linear forward pass on the unwrapped handles.
func (Fused) LinearForward(y, x, w, b tensor.Operand) {
	cpuCap[tensor.LinearBackend]().LinearForward(unwrapOp("LinearForward", y), unwrapOp("LinearForward", x),
		unwrapOp("LinearForward", w), unwrapOpt("LinearForward", b))
}

// LinearInputGrad runs the CPU's linear input gradient on the unwrapped handles.
func (Fused) LinearInputGrad(dx, dy, w tensor.Operand, acc bool) {
	cpuCap[tensor.LinearBackend]().LinearInputGrad(unwrapOp("LinearInputGrad", dx), unwrapOp("LinearInputGrad", dy),
		unwrapOp("LinearInputGrad", w), acc)
}

// LinearWeightGrad runs the CPU's linear weight gradient on the unwrapped handles.
func (Fused) LinearWeightGrad(dw, dy, x tensor.Operand, acc bool) {
	cpuCap[tensor.LinearBackend]().LinearWeightGrad(unwrapOp("LinearWeightGrad", dw), unwrapOp("LinearWeightGrad", dy),
		unwrapOp("LinearWeightGrad", x), acc)
}

// LinearBiasGrad runs the CPU's bias gradient on the unwrapped handles.
func (Fused) LinearBiasGrad(db, dy tensor.Operand) {
	cpuCap[tensor.LinearBackend]().LinearBiasGrad(unwrapOp("LinearBiasGrad", db), unwrapOp("LinearBiasGrad", dy))
}

var _ tensor.PoolBackend = Fused{}

// MaxPool2d runs the CPU's max pooling on the unwrapped handles.
func (Fused) MaxPool2d(y, x, arg tensor.Operand, g tensor.PoolGeom, k, s, p int) {
	cpuCap[tensor.PoolBackend]().MaxPool2d(unwrapOp("MaxPool2d", y), unwrapOp("MaxPool2d", x), unwrapOp("MaxPool2d", arg), g, k, s, p)
}

// MaxPool2dBack runs the CPU's max pooling backward on the unwrapped handles.
func (Fused) MaxPool2dBack(dx, dy, arg tensor.Operand, g tensor.PoolGeom, k, s, p int, acc bool) {
	cpuCap[tensor.PoolBackend]().MaxPool2dBack(unwrapOp("MaxPool2dBack", dx), unwrapOp("MaxPool2dBack", dy), unwrapOp("MaxPool2dBack", arg), g, k, s, p, acc)
}

// AdaptiveAvgPool2d runs the CPU's adaptive average pooling on the unwrapped handles.
func (Fused) AdaptiveAvgPool2d(y, x tensor.Operand, g tensor.PoolGeom) {
	cpuCap[tensor.PoolBackend]().AdaptiveAvgPool2d(unwrapOp("AdaptiveAvgPool2d", y), unwrapOp("AdaptiveAvgPool2d", x), g)
}

// AdaptiveAvgPool2dBack runs the CPU's adaptive average pooling backward on
// the unwrapped handles.
func (Fused) AdaptiveAvgPool2dBack(dx, dy tensor.Operand, g tensor.PoolGeom, acc bool) {
	cpuCap[tensor.PoolBackend]().AdaptiveAvgPool2dBack(unwrapOp("AdaptiveAvgPool2dBack", dx), unwrapOp("AdaptiveAvgPool2dBack", dy), g, acc)
}

var _ tensor.LossBackend = Fused{}

// BYOL runs the CPU's BYOL loss on the unwrapped handles.
func (Fused) BYOL(loss, p, z tensor.Operand, eps float64) {
	cpuCap[tensor.LossBackend]().BYOL(unwrapOp("BYOL", loss), unwrapOp("BYOL", p), unwrapOp("BYOL", z), eps)
}

// BYOLBack runs the CPU's BYOL gradient on the unwrapped handles.
func (Fused) BYOLBack(dp, dz, p, z, seed tensor.Operand, eps float64) {
	cpuCap[tensor.LossBackend]().BYOLBack(unwrapOpt("BYOLBack", dp), unwrapOpt("BYOLBack", dz), unwrapOp("BYOLBack", p),
		unwrapOp("BYOLBack", z), unwrapOp("BYOLBack", seed), eps)
}

// BarlowTwins runs the CPU's Barlow Twins loss on the unwrapped handles.
func (Fused) BarlowTwins(loss, g, h1, h2, z1, z2 tensor.Operand, lambda, eps float64) {
	cpuCap[tensor.LossBackend]().BarlowTwins(unwrapOp("BarlowTwins", loss), unwrapOp("BarlowTwins", g), unwrapOp("BarlowTwins", h1),
		unwrapOp("BarlowTwins", h2), unwrapOp("BarlowTwins", z1), unwrapOp("BarlowTwins", z2), lambda, eps)
}

// BarlowTwinsBack runs the CPU's Barlow Twins gradient on the unwrapped handles.
func (Fused) BarlowTwinsBack(dz1, dz2, z1, z2, h1, h2, g, seed tensor.Operand, eps float64) {
	cpuCap[tensor.LossBackend]().BarlowTwinsBack(unwrapOpt("BarlowTwinsBack", dz1), unwrapOpt("BarlowTwinsBack", dz2),
		unwrapOp("BarlowTwinsBack", z1), unwrapOp("BarlowTwinsBack", z2), unwrapOp("BarlowTwinsBack", h1),
		unwrapOp("BarlowTwinsBack", h2), unwrapOp("BarlowTwinsBack", g), unwrapOp("BarlowTwinsBack", seed), eps)
}

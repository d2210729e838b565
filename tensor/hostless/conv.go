package hostless

import "github.com/duel-ssl/duel/tensor"

var _ tensor.ConvBackend = Fused{}

// ConvAlgos returns the CPU's choice of algorithms: the same passes run
// here.
func (Fused) ConvAlgos(s tensor.ConvShape, req tensor.ConvAlgo) tensor.ConvAlgos {
	return cpuCap[tensor.ConvBackend]().ConvAlgos(s, req)
}

// ConvForward runs the CPU's convolution on the unwrapped handles; what it
// keeps for the input gradient stays private to the backend.
func (Fused) ConvForward(y, x, w, b tensor.Operand, s tensor.ConvShape, al tensor.ConvAlgos, keep bool) tensor.ConvSaved {
	return cpuCap[tensor.ConvBackend]().ConvForward(unwrapOp("ConvForward", y), unwrapOp("ConvForward", x),
		unwrapOp("ConvForward", w), unwrapOpt("ConvForward", b), s, al, keep)
}

// ConvInputGrad runs the CPU's convolution input gradient on the unwrapped
// handles.
func (Fused) ConvInputGrad(dx, dy, w tensor.Operand, s tensor.ConvShape, al tensor.ConvAlgos, saved tensor.ConvSaved, acc bool) {
	cpuCap[tensor.ConvBackend]().ConvInputGrad(unwrapOp("ConvInputGrad", dx), unwrapOp("ConvInputGrad", dy),
		unwrapOp("ConvInputGrad", w), s, al, saved, acc)
}

// ConvWeightGrad runs the CPU's convolution weight gradient on the
// unwrapped handles.
func (Fused) ConvWeightGrad(dw, dy, x tensor.Operand, s tensor.ConvShape, al tensor.ConvAlgos, acc bool) {
	cpuCap[tensor.ConvBackend]().ConvWeightGrad(unwrapOp("ConvWeightGrad", dw), unwrapOp("ConvWeightGrad", dy),
		unwrapOp("ConvWeightGrad", x), s, al, acc)
}

// ConvBiasGrad runs the CPU's convolution bias gradient on the unwrapped
// handles.
func (Fused) ConvBiasGrad(db, dy tensor.Operand, s tensor.ConvShape) {
	cpuCap[tensor.ConvBackend]().ConvBiasGrad(unwrapOp("ConvBiasGrad", db), unwrapOp("ConvBiasGrad", dy), s)
}

var _ tensor.BatchNormBackend = Fused{}

// unwrapNorm returns a with every operand unwrapped (the residual only
// when present).
func unwrapNorm(op string, a tensor.BatchNormArgs) tensor.BatchNormArgs {
	a.Y, a.X, a.Res = unwrapOp(op, a.Y), unwrapOp(op, a.X), unwrapOpt(op, a.Res)
	a.Gamma, a.Beta = unwrapOp(op, a.Gamma), unwrapOp(op, a.Beta)
	a.RunningMean, a.RunningVar = unwrapOp(op, a.RunningMean), unwrapOp(op, a.RunningVar)
	a.Mean, a.InvStd = unwrapOp(op, a.Mean), unwrapOp(op, a.InvStd)
	a.NumBatches = unwrapOpt(op, a.NumBatches)
	return a
}

// BatchNormTrain runs the CPU's training-mode BatchNorm on the unwrapped
// handles.
func (Fused) BatchNormTrain(g tensor.BatchNormGeom, a tensor.BatchNormArgs) {
	cpuCap[tensor.BatchNormBackend]().BatchNormTrain(g, unwrapNorm("BatchNormTrain", a))
}

// BatchNormEval runs the CPU's evaluation-mode BatchNorm on the unwrapped
// handles.
func (Fused) BatchNormEval(g tensor.BatchNormGeom, a tensor.BatchNormArgs) {
	cpuCap[tensor.BatchNormBackend]().BatchNormEval(g, unwrapNorm("BatchNormEval", a))
}

// BatchNormBackward runs the CPU's BatchNorm backward pass on the unwrapped
// handles.
func (Fused) BatchNormBackward(g tensor.BatchNormGeom, a tensor.BatchNormGrad) {
	const op = "BatchNormBackward"
	a.X, a.DY, a.Y = unwrapOp(op, a.X), unwrapOp(op, a.DY), unwrapOpt(op, a.Y)
	a.Mean, a.InvStd, a.Gamma = unwrapOp(op, a.Mean), unwrapOp(op, a.InvStd), unwrapOp(op, a.Gamma)
	a.DX, a.DRes = unwrapOpt(op, a.DX), unwrapOpt(op, a.DRes)
	a.DGamma, a.DBeta = unwrapOpt(op, a.DGamma), unwrapOpt(op, a.DBeta)
	cpuCap[tensor.BatchNormBackend]().BatchNormBackward(g, a)
}

package tensor

import (
	"fmt"

	koptim "github.com/duel-ssl/duel/kernels/optim"
)

// SGDArgs are the hyper-parameters of one fused SGD step of one parameter
// (kernels/optim.SGD: LR, WeightDecay, Momentum, Dampening, Nesterov, and
// First, set at the momentum buffer's first use).
type SGDArgs = koptim.SGD

// LARSArgs are the hyper-parameters of one fused LARS step of one parameter
// (kernels/optim.LARS: SGDArgs plus Eta, Eps, ClipLR and Excluded).
type LARSArgs = koptim.LARS

// AdamArgs are the hyper-parameters of one fused Adam or AdamW step of one
// parameter (kernels/optim.Adam: LR, Beta1, Beta2, Eps, WeightDecay,
// Decoupled, and Step, the parameter's step count after increment).
type AdamArgs = koptim.Adam

// OptimizerBackend is an optional capability of a Backend, discovered by
// type assertion as io.WriterTo is: fused optimizer steps, each one pass
// over one parameter that updates it and its state in place, with PyTorch's
// update rules (the formulas are kernels/optim's; package nn/optim
// documents them per optimizer). A backend without it still trains: package
// nn/optim then composes each step from the core Backend operations, in
// float32.
//
// Every operand of a call is a contiguous view with the parameter's number
// of elements, on this backend's storage; param and the state operands do
// not overlap one another or grad. The momentum buffer is ignored (and may
// be the zero Operand) when Momentum is 0. The CPU backend implements the
// capability with float64 arithmetic per element, rounded once when stored
// (the EMA in float32).
type OptimizerBackend interface {
	// SGDStep applies one SGD step: param, and buf when a.Momentum != 0.
	SGDStep(param, grad, buf Operand, a SGDArgs)
	// LARSStep applies one LARS step, computing the norms of param and
	// grad itself.
	LARSStep(param, grad, buf Operand, a LARSArgs)
	// AdamStep applies one Adam or AdamW step to param and the first and
	// second moment estimates m and v.
	AdamStep(param, grad, m, v Operand, a AdamArgs)
	// EMA computes target = m*target + (1-m)*online with m and 1-m rounded
	// to float32 and float32 arithmetic (MoCo's momentum update, BYOL's
	// target update).
	EMA(target, online Operand, m float64)
}

// MultiOptimizerBackend is an optional capability of an OptimizerBackend:
// its SGD, Adam and EMA steps, and the zeroing of gradients, over many
// parameters at once with one set of hyper-parameters (one launch on a
// GPU, where a launch per parameter costs more than most parameters'
// arithmetic). Each call's result is that of the single-parameter calls
// on every index of its lists, bit for bit; the lists pair up by index and
// have equal lengths (bufs may be nil when a.Momentum is 0), and no
// operand overlaps another of the call. Package nn/optim uses it whenever
// the parameters' backend has it.
type MultiOptimizerBackend interface {
	OptimizerBackend
	// SGDSteps applies SGDStep(params[i], grads[i], bufs[i], a) for every i.
	SGDSteps(params, grads, bufs []Operand, a SGDArgs)
	// AdamSteps applies AdamStep(params[i], grads[i], ms[i], vs[i], a) for
	// every i.
	AdamSteps(params, grads, ms, vs []Operand, a AdamArgs)
	// EMAs applies EMA(targets[i], onlines[i], m) for every i.
	EMAs(targets, onlines []Operand, m float64)
	// ZeroAll sets every element of every operand to 0 (an optimizer's
	// ZeroGrad); each operand is a contiguous view.
	ZeroAll(xs []Operand)
}

var (
	_ OptimizerBackend      = cpu{}
	_ MultiOptimizerBackend = cpu{}
)

// flat returns the elements of a contiguous host operand as a slice.
func flat(op string, o Operand) []float32 {
	n := numel(o.Shape)
	if !isContiguous(o.Shape, o.Strides) {
		panic(fmt.Sprintf("tensor: cpu backend: %s: operand of shape %v strides %v is not contiguous", op, o.Shape, o.Strides))
	}
	return o.Buf.Host[o.Offset : o.Offset+n]
}

// momentumBuf returns buf's elements, or nil when the step has no momentum.
func momentumBuf(op string, buf Operand, momentum float64) []float32 {
	if momentum == 0 {
		return nil
	}
	return flat(op, buf)
}

func (cpu) SGDStep(param, grad, buf Operand, a SGDArgs) {
	koptim.SGDStep(flat("SGDStep", param), flat("SGDStep", grad), momentumBuf("SGDStep", buf, a.Momentum), a)
}

func (cpu) LARSStep(param, grad, buf Operand, a LARSArgs) {
	koptim.LARSStep(flat("LARSStep", param), flat("LARSStep", grad), momentumBuf("LARSStep", buf, a.Momentum), a)
}

func (cpu) AdamStep(param, grad, m, v Operand, a AdamArgs) {
	koptim.AdamStep(flat("AdamStep", param), flat("AdamStep", grad), flat("AdamStep", m), flat("AdamStep", v), a)
}

func (cpu) EMA(target, online Operand, m float64) {
	koptim.EMA(flat("EMA", target), flat("EMA", online), m)
}

// The CPU's multi-parameter steps are its single-parameter ones in turn.

func (c cpu) SGDSteps(params, grads, bufs []Operand, a SGDArgs) {
	PairUp("SGDSteps", params, grads)
	if a.Momentum != 0 || bufs != nil {
		PairUp("SGDSteps", params, bufs)
	}
	for i := range params {
		var buf Operand
		if bufs != nil {
			buf = bufs[i]
		}
		c.SGDStep(params[i], grads[i], buf, a)
	}
}

func (c cpu) AdamSteps(params, grads, ms, vs []Operand, a AdamArgs) {
	PairUp("AdamSteps", params, grads, ms, vs)
	for i := range params {
		c.AdamStep(params[i], grads[i], ms[i], vs[i], a)
	}
}

func (c cpu) EMAs(targets, onlines []Operand, m float64) {
	PairUp("EMAs", targets, onlines)
	for i := range targets {
		c.EMA(targets[i], onlines[i], m)
	}
}

func (cpu) ZeroAll(xs []Operand) {
	for _, x := range xs {
		koptim.Zero(flat("ZeroAll", x))
	}
}

// PairUp panics unless every list of a MultiOptimizerBackend call op has
// as many operands as the first (a programming error, as a shape mismatch
// is).
func PairUp(op string, first []Operand, lists ...[]Operand) {
	for _, l := range lists {
		if len(l) != len(first) {
			panic(fmt.Sprintf("tensor: %s: lists of %d and %d operands, expected one operand per parameter in each", op, len(first), len(l)))
		}
	}
}

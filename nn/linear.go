package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// Linear is y = x W^T + b over the last axis of x, PyTorch's nn.Linear;
// the passes are its backend's (tensor.LinearBackend, or GEMMs and
// elementwise operations of the core Backend).
// Members: weight (Out x In), bias (Out) when present.
type Linear struct {
	In, Out int
	Weight  *autograd.Var
	Bias    *autograd.Var // nil without bias

	arena *Arena
}

// SetArena makes the layer allocate from a.
func (l *Linear) SetArena(a *Arena) { l.arena = a }

// NewLinear returns a Linear layer with PyTorch's default initialisation
// drawn from r.
func NewLinear(in, out int, bias bool, r *rand.Rand) *Linear {
	l := &Linear{In: in, Out: out, Weight: autograd.Param(tensor.New(out, in), "weight")}
	var b *tensor.Tensor
	if bias {
		b = tensor.New(out)
		l.Bias = autograd.Param(b, "bias")
	}
	DefaultInit(l.Weight.Value, b, r)
	return l
}

// Members returns weight and bias.
func (l *Linear) Members() []Member {
	ms := []Member{{Name: "weight", Param: l.Weight}}
	if l.Bias != nil {
		ms = append(ms, Member{Name: "bias", Param: l.Bias})
	}
	return ms
}

// Forward maps x of shape (..., In) to (..., Out) on x's device.
func (l *Linear) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) == 0 || shape[len(shape)-1] != l.In {
		panic(fmt.Sprintf("nn.Linear(%d, %d): input of shape %v, expected (..., %d)", l.In, l.Out, shape, l.In))
	}
	rows := 1
	for _, d := range shape[:len(shape)-1] {
		rows *= d
	}
	outShape := append(append([]int(nil), shape[:len(shape)-1]...), l.Out)
	xv := x.Value.Contiguous()
	be := linearOf(xv)
	xo := memOp(xv, rows, l.In)
	wo := memOp(l.Weight.Value.Contiguous(), l.Out, l.In)
	y := l.arena.tensorOn(xv.Device(), false, outShape...)
	inputs := []*autograd.Var{x, l.Weight}
	var bo tensor.Operand
	if l.Bias != nil {
		bo = memOp(l.Bias.Value.Contiguous(), l.Out)
		inputs = append(inputs, l.Bias)
	}
	be.LinearForward(memOp(y, rows, l.Out), xo, wo, bo)
	return tp.Record(y, func(out *autograd.Var) {
		defer l.arena.release(out.Grad)
		// The parameters' gradients never come from the arena: the
		// optimizer reads them after the arena is reset.
		dy := memOp(gradIn(out), rows, l.Out)
		switch {
		case !x.RequiresGrad:
		case !x.Value.IsContiguous():
			// x's gradient would keep x's layout: computed row-major
			// first, then added in.
			dx := tensor.ZerosOn(xv.Device(), shape...)
			be.LinearInputGrad(memOp(dx, rows, l.In), dy, wo, false)
			autograd.AccumulateGradOwned(x, dx)
		default:
			dx, acc := l.arena.gradTensor(x)
			be.LinearInputGrad(memOp(dx, rows, l.In), dy, wo, acc)
		}
		if dw, acc := (*Arena)(nil).gradTensor(l.Weight); dw != nil {
			be.LinearWeightGrad(memOp(dw, l.Out, l.In), dy, xo, acc)
		}
		if l.Bias != nil {
			if db, _ := (*Arena)(nil).gradTensor(l.Bias); db != nil {
				be.LinearBiasGrad(memOp(db, l.Out), dy)
			}
		}
	}, inputs...)
}

// linearOf returns the tensor.LinearBackend of t's backend, or linearOps,
// its composition of core Backend operations.
func linearOf(t *tensor.Tensor) tensor.LinearBackend {
	b := t.Backend()
	if lb, ok := b.(tensor.LinearBackend); ok {
		return lb
	}
	return linearOps{b}
}

// linearOps composes the passes of tensor.LinearBackend from core Backend
// operations: the GEMMs of Backend.Gemm (the CPU's bits when it runs
// kernels/gemm), the bias added by Backend.Binary (the same float32 sums
// as kernels/linear), the bias gradient summed by Backend.Reduce (the
// backend's order of summation) and added by Backend.AddScaled.
type linearOps struct{ b tensor.Backend }

// gemm runs one GEMM C = alpha·op(A)·op(B) + beta·C on dense operands.
func (o linearOps) gemm(ta, tb bool, m, n, k int, a, b, c tensor.Operand, lda, ldb int, beta float32) {
	o.b.Gemm(tensor.GemmArgs{TransA: ta, TransB: tb, M: m, N: n, K: k, Alpha: 1, Beta: beta,
		A: a.Buf, B: b.Buf, C: c.Buf, OffA: a.Offset, OffB: b.Offset, OffC: c.Offset,
		LDA: lda, LDB: ldb, LDC: n, Batch: 1})
}

// LinearForward sets y = x Wᵀ (+ b).
func (o linearOps) LinearForward(y, x, w, b tensor.Operand) {
	rows, out, in := y.Shape[0], y.Shape[1], x.Shape[1]
	o.gemm(false, true, rows, out, in, x, w, y, in, in, 0)
	if tensor.IsZeroOperand(b) {
		return
	}
	bb := b
	bb.Shape, bb.Strides = []int{rows, out}, []int{0, 1}
	o.b.Binary(tensor.OpAdd, y, y, bb)
}

// LinearInputGrad sets (adds, when acc) dx = dy W.
func (o linearOps) LinearInputGrad(dx, dy, w tensor.Operand, acc bool) {
	rows, in, out := dx.Shape[0], dx.Shape[1], dy.Shape[1]
	o.gemm(false, false, rows, in, out, dy, w, dx, out, in, beta(acc))
}

// LinearWeightGrad sets (adds, when acc) dW = dyᵀ x.
func (o linearOps) LinearWeightGrad(dw, dy, x tensor.Operand, acc bool) {
	out, in, rows := dw.Shape[0], dw.Shape[1], x.Shape[0]
	o.gemm(true, false, out, in, rows, dy, x, dw, out, in, beta(acc))
}

// LinearBiasGrad adds the sum of the rows of dy into db.
func (o linearOps) LinearBiasGrad(db, dy tensor.Operand) {
	out := dy.Shape[1]
	s := tensor.Operand{Buf: o.b.Alloc(out), Shape: []int{1, out}, Strides: []int{out, 1}}
	o.b.Reduce(tensor.ReduceSum, s, dy)
	s.Shape, s.Strides = []int{out}, []int{1}
	o.b.AddScaled(db, 1, s)
}

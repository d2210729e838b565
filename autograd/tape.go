package autograd

import (
	"fmt"

	"github.com/duel-ssl/duel/tensor"
)

// Tape records operations for a backward pass. The zero value is not used:
// create one with NewTape. A nil *Tape is valid everywhere and means no-grad
// mode: nothing is recorded.
type Tape struct {
	nodes []node
}

// node is one recorded operation: its output and a closure that reads
// out.Grad and adds into the inputs' gradients.
type node struct {
	out      *Var
	backward func(out *Var)
}

// NewTape returns an empty tape that records operations.
func NewTape() *Tape { return &Tape{} }

// Recording reports whether an operation on inputs must be recorded: the tape
// is non-nil and at least one input requires a gradient.
func (tp *Tape) Recording(inputs ...*Var) bool {
	if tp == nil {
		return false
	}
	for _, in := range inputs {
		if in.RequiresGrad {
			return true
		}
	}
	return false
}

// Record wraps value as the output of an operation on inputs. When the tape
// is recording for these inputs, backward is remembered: during Backward it
// is called once (if at all) with out.Grad holding the output's gradient,
// and it must add the inputs' gradients with AccumulateGrad or
// AccumulateGradOwned (or directly into an input's existing Grad). Otherwise
// the output is a constant. This is the whole extension API: a new op is a
// forward computation plus one call to Record.
func (tp *Tape) Record(value *tensor.Tensor, backward func(out *Var), inputs ...*Var) *Var {
	out := &Var{Value: value}
	if !tp.Recording(inputs...) {
		return out
	}
	out.RequiresGrad = true
	tp.nodes = append(tp.nodes, node{out: out, backward: backward})
	return out
}

// Len returns the number of recorded operations.
func (tp *Tape) Len() int {
	if tp == nil {
		return 0
	}
	return len(tp.nodes)
}

// Backward computes the gradients of loss, which must hold a single
// element, with respect to every variable that requires a gradient, adding
// into the Grad fields of the leaves (variables not produced by a recorded
// op). The gradients of intermediate variables and the recorded closures
// are dropped as the pass goes, so the graph's memory is released and the
// tape is empty afterwards. It panics on a nil tape.
func (tp *Tape) Backward(loss *Var) {
	if n := loss.Value.Numel(); n != 1 {
		panic(fmt.Sprintf("autograd.Backward: loss %v has %d elements, expected 1 (use BackwardWith)", loss, n))
	}
	seed := tensor.ZerosOn(loss.Value.Device(), loss.Value.Shape()...)
	seed.Fill(1)
	tp.backward(loss, seed, true)
}

// BackwardWith runs the backward pass seeded with grad (of out's shape, not
// kept) as the gradient of out, which may hold any number of elements.
func (tp *Tape) BackwardWith(out *Var, grad *tensor.Tensor) {
	tp.backward(out, grad, false)
}

// backward runs the backward pass; owned says whether grad may be kept.
func (tp *Tape) backward(out *Var, grad *tensor.Tensor, owned bool) {
	if tp == nil {
		panic(fmt.Sprintf("autograd: Backward of %v on a nil tape (no-grad mode recorded nothing)", out))
	}
	if owned {
		AccumulateGradOwned(out, grad)
	} else {
		AccumulateGrad(out, grad)
	}
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		nd := tp.nodes[i]
		if nd.out.Grad != nil {
			nd.backward(nd.out)
		}
		// Intermediate gradients are not needed once propagated.
		nd.out.Grad = nil
		tp.nodes[i] = node{}
	}
	tp.nodes = tp.nodes[:0]
}

// Reset drops every recorded operation without a backward pass.
func (tp *Tape) Reset() {
	if tp == nil {
		return
	}
	clear(tp.nodes)
	tp.nodes = tp.nodes[:0]
}

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
	track bool // remember each node's inputs (TrackInputs)
}

// node is one recorded operation: its output and a closure that reads
// out.Grad and adds into the inputs' gradients.
type node struct {
	out      *Var
	backward func(out *Var)
	inputs   []*Var // kept only when the tape tracks inputs
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
	nd := node{out: out, backward: backward}
	if tp.track {
		nd.inputs = append([]*Var(nil), inputs...)
	}
	tp.nodes = append(tp.nodes, nd)
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
	tp.backward(loss, seed, true, nil)
}

// BackwardWith runs the backward pass seeded with grad (of out's shape, not
// kept) as the gradient of out, which may hold any number of elements.
func (tp *Tape) BackwardWith(out *Var, grad *tensor.Tensor) {
	tp.backward(out, grad, false, nil)
}

// TrackInputs makes the tape remember the inputs of every operation
// recorded from now on, which BackwardNotify needs to tell when a leaf's
// gradient is complete. It costs one small allocation per operation.
func (tp *Tape) TrackInputs() {
	if tp != nil {
		tp.track = true
	}
}

// BackwardNotify is Backward that also calls ready(i) as soon as no
// operation left in the pass can add to leaves[i]'s gradient: right after
// the earliest recorded operation that reads it has propagated, or before
// the pass for a leaf that no operation reads. Data-parallel training
// starts the all-reduce of a bucket of gradients there, while the rest of
// the backward pass runs (as PyTorch's DDP does). Every leaf is reported
// once, during the pass. The tape must have tracked its inputs since the
// leaves' first use (TrackInputs); otherwise every leaf is reported after
// the pass.
func (tp *Tape) BackwardNotify(loss *Var, leaves []*Var, ready func(i int)) {
	if n := loss.Value.Numel(); n != 1 {
		panic(fmt.Sprintf("autograd.BackwardNotify: loss %v has %d elements, expected 1", loss, n))
	}
	seed := tensor.ZerosOn(loss.Value.Device(), loss.Value.Shape()...)
	seed.Fill(1)
	if tp == nil || !tp.track {
		tp.backward(loss, seed, true, nil)
		for i := range leaves {
			ready(i)
		}
		return
	}
	index := make(map[*Var]int, len(leaves))
	for i, v := range leaves {
		index[v] = i
	}
	first := make([]int, len(leaves))
	for i := range first {
		first[i] = -1
	}
	for n, nd := range tp.nodes {
		for _, in := range nd.inputs {
			if i, ok := index[in]; ok && first[i] < 0 {
				first[i] = n
			}
		}
	}
	at := make(map[int][]int) // node index -> leaves complete after it
	for i, n := range first {
		if n < 0 {
			ready(i)
			continue
		}
		at[n] = append(at[n], i)
	}
	tp.backward(loss, seed, true, func(n int) {
		for _, i := range at[n] {
			ready(i)
		}
	})
}

// backward runs the backward pass; owned says whether grad may be kept.
func (tp *Tape) backward(out *Var, grad *tensor.Tensor, owned bool, after func(n int)) {
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
		if after != nil {
			after(i)
		}
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

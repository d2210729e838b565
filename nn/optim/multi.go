package optim

import "github.com/duel-ssl/duel/tensor"

// Multi-parameter steps. Where the parameters' backend implements
// tensor.MultiOptimizerBackend (the CUDA backend: one launch for all of
// them instead of one per parameter; the CPU's too, in turn), an optimizer
// gathers the steps that share a device and hyper-parameters into one
// call. The backend gives each parameter the bits of its single-parameter
// step, and the parameters are independent, so the grouping changes no
// result.

// group is the operands of the steps that one multi-parameter call runs:
// ops[k] holds the k-th operand of every step, in the call's order.
type group[A comparable] struct {
	be   tensor.MultiOptimizerBackend
	dev  tensor.Device
	args A
	ops  [][]tensor.Operand
}

// groups gathers steps into groups, in order of first use.
type groups[A comparable] []*group[A]

// add adds a step on ts[0]'s device with arguments args and operands ts
// (a nil tensor is an absent operand: the zero Operand) to its group. It
// adds nothing and returns false when the backend has no multi-parameter
// steps or an operand is not contiguous: the caller then runs the step on
// its own.
func (gs *groups[A]) add(args A, ts ...*tensor.Tensor) bool {
	be, ok := ts[0].Backend().(tensor.MultiOptimizerBackend)
	if !ok {
		return false
	}
	for _, t := range ts {
		if t != nil && !t.IsContiguous() {
			return false
		}
	}
	dev := ts[0].Device()
	var g *group[A]
	for _, h := range *gs {
		if h.dev == dev && h.args == args {
			g = h
			break
		}
	}
	if g == nil {
		g = &group[A]{be: be, dev: dev, args: args, ops: make([][]tensor.Operand, len(ts))}
		*gs = append(*gs, g)
	}
	for k, t := range ts {
		g.ops[k] = append(g.ops[k], operand(t))
	}
	return true
}

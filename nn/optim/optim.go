// Package optim holds the optimizers (SGD, Adam, AdamW, LARS) and learning
// rate schedules used to train the models.
//
// Optimizers follow PyTorch's update rules exactly (each type's doc comment
// gives the formulas) and update the parameters in place on their device:
// every step goes through the parameter's tensor.Backend, never through
// host slices. A backend implementing tensor.OptimizerBackend (the CPU
// backend does) runs each parameter's step as one fused pass, whose
// arithmetic is done in float64 and rounded once when stored; on another
// backend the step is composed from its core operations in float32 (step.go
// says how close that comes). State (momentum buffers, moment estimates)
// lives on the parameters' device; StateDict copies it to the host and
// LoadStateDict copies it back.
package optim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	// Step applies one update to every parameter that has a gradient.
	// Parameters whose Grad is nil are skipped, as in PyTorch.
	Step()
	// ZeroGrad sets every parameter's gradient to zero in place.
	ZeroGrad()
	// LR returns the current learning rate.
	LR() float64
	// SetLR sets the learning rate used by the following steps.
	SetLR(lr float64)
	// StateDict returns the optimizer's state (momentum buffers, moment
	// estimates, step counts) as named tensors for a checkpoint. Keys are
	// "<i>.<buffer>" with i the parameter's index. The tensors are copies.
	StateDict() map[string]*tensor.Tensor
	// LoadStateDict restores a state saved by StateDict of an optimizer of
	// the same kind over parameters of the same shapes.
	LoadStateDict(state map[string]*tensor.Tensor) error
}

// base holds what every optimizer shares: the parameters and the rate.
type base struct {
	params []*autograd.Var
	lr     float64
}

func (b *base) LR() float64      { return b.lr }
func (b *base) SetLR(lr float64) { b.lr = lr }

// ZeroGrad zeroes every allocated gradient in place (PyTorch 1.13's default,
// set_to_none=False), so the next backward pass accumulates without
// allocating: in one call per device where the backend has
// multi-parameter steps (see multi.go).
func (b *base) ZeroGrad() {
	var gs groups[struct{}]
	for _, p := range b.params {
		if p.Grad != nil && !gs.add(struct{}{}, p.Grad) {
			p.Grad.Zero()
		}
	}
	for _, g := range gs {
		g.be.ZeroAll(g.ops[0])
	}
}

// buffers is per-parameter float32 state on the parameters' devices,
// allocated lazily at first use.
type buffers []*tensor.Tensor

// get returns buffer i, allocating a zero tensor of p's shape on p's
// device if needed. The second result reports whether it was freshly
// allocated.
func (bs buffers) get(i int, p *autograd.Var) (*tensor.Tensor, bool) {
	if bs[i] == nil {
		bs[i] = tensor.ZerosOn(p.Value.Device(), p.Value.Shape()...)
		return bs[i], true
	}
	return bs[i], false
}

// stateDict adds named host copies of the allocated buffers to m.
func (bs buffers) stateDict(m map[string]*tensor.Tensor, name string) {
	for i, t := range bs {
		if t != nil {
			m[strconv.Itoa(i)+"."+name] = hostCopy(t)
		}
	}
}

// hostCopy returns a copy of t in host memory.
func hostCopy(t *tensor.Tensor) *tensor.Tensor {
	if t.Device() == tensor.CPU {
		return t.Clone()
	}
	h, err := t.To(tensor.CPU)
	if err != nil {
		panic(fmt.Sprintf("optim: copying state to the host: %v", err))
	}
	return h
}

// loadStateDict parses a state dict whose keys are "<i>.<name>" with a
// name among the given buffers, checking indices and shapes.
func loadStateDict(kind string, params []*autograd.Var, state map[string]*tensor.Tensor, named map[string]buffers, steps []int64) error {
	fresh := make(map[string]buffers, len(named))
	for name := range named {
		fresh[name] = make(buffers, len(params))
	}
	var newSteps []int64
	if steps != nil {
		newSteps = make([]int64, len(params))
	}
	for key, t := range state {
		idx, name, ok := strings.Cut(key, ".")
		i, err := strconv.Atoi(idx)
		if !ok || err != nil || i < 0 || i >= len(params) {
			return fmt.Errorf("optim: %s state: key %q is not <index>.<buffer> with an index below %d", kind, key, len(params))
		}
		if name == "step" && steps != nil {
			if t.Numel() != 1 {
				return fmt.Errorf("optim: %s state: %q holds %v, expected one non-negative integer", kind, key, t)
			}
			v := t.Item()
			if v < 0 || float32(int64(v)) != v {
				return fmt.Errorf("optim: %s state: %q holds %v, expected one non-negative integer", kind, key, t)
			}
			newSteps[i] = int64(v)
			continue
		}
		bs, ok := fresh[name]
		if !ok {
			return fmt.Errorf("optim: %s state: unknown buffer %q in key %q", kind, name, key)
		}
		if !slices.Equal(t.Shape(), params[i].Value.Shape()) {
			return fmt.Errorf("optim: %s state: %q has shape %v, parameter %d (%s) has shape %v", kind, key, t.Shape(), i, params[i], params[i].Value.Shape())
		}
		if dev := params[i].Value.Device(); t.Device() != dev {
			c, err := t.To(dev)
			if err != nil {
				return fmt.Errorf("optim: %s state: %q: %w", kind, key, err)
			}
			bs[i] = c
		} else {
			bs[i] = t.Contiguous().Clone()
		}
	}
	for name, bs := range fresh {
		copy(named[name], bs)
	}
	copy(steps, newSteps)
	return nil
}

// checkParams validates a parameter list at construction: non-nil,
// contiguous values, no parameter listed twice.
func checkParams(kind string, params []*autograd.Var) error {
	seen := make(map[*autograd.Var]bool, len(params))
	for i, p := range params {
		switch {
		case p == nil || p.Value == nil:
			return fmt.Errorf("optim: %s: parameter %d is nil", kind, i)
		case !p.Value.IsContiguous():
			return fmt.Errorf("optim: %s: parameter %d (%s) is not contiguous", kind, i, p)
		case seen[p]:
			return fmt.Errorf("optim: %s: parameter %d (%s) is listed twice", kind, i, p)
		}
		seen[p] = true
	}
	return nil
}

// gradOf returns p's gradient as a contiguous tensor, or nil when p has none.
func gradOf(p *autograd.Var) *tensor.Tensor {
	if p.Grad == nil {
		return nil
	}
	return p.Grad.Contiguous()
}

// checkHyper reports a negative or non-finite hyper-parameter.
func checkHyper(kind, name string, v float64) error {
	if !(v >= 0) || v > 1e300 {
		return fmt.Errorf("optim: %s: %s = %v, expected a finite value >= 0", kind, name, v)
	}
	return nil
}

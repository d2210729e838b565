package nn

import (
	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/tensor"
)

// data returns the elements of v's value in row-major order, without a copy
// when the value is contiguous.
func data(v *autograd.Var) []float32 { return v.Value.Contiguous().Data() }

// gradOf returns the elements of out's gradient in a backward closure, in
// the memory layout of out's value (see layout.go).
func gradOf(out *autograd.Var) []float32 { return inLayout(out.Grad, channelMajor(out.Value)) }

// channelMajor reports whether t is stored CNHW (and not also NCHW).
func channelMajor(t *tensor.Tensor) bool { return !t.IsContiguous() && isCNHW(t) }

// gradSlot returns the storage of v's gradient, in the memory layout of v's
// value, creating it when v has none yet. acc reports whether the caller
// must add into it (true) or may overwrite it (false: freshly created, all
// zero). It returns nil when v needs no gradient.
func gradSlot(v *autograd.Var) (g []float32, acc bool) {
	if !v.RequiresGrad {
		return nil, false
	}
	cm := channelMajor(v.Value)
	if v.Grad == nil {
		v.Grad = newLayout(cm, v.Value.Shape()...)
		return storage(v.Grad), false
	}
	if channelMajor(v.Grad) != cm || !(v.Grad.IsContiguous() || isCNHW(v.Grad)) {
		g := newLayout(cm, v.Value.Shape()...)
		copy(storage(g), inLayout(v.Grad, cm))
		v.Grad = g
	}
	return storage(v.Grad), true
}

// beta returns the GEMM beta that accumulates (1) or overwrites (0).
func beta(acc bool) float32 {
	if acc {
		return 1
	}
	return 0
}

// workers returns how many goroutines to split work of about n scalar
// operations over (par.Workers).
func workers(n int) int { return par.Workers(n) }

// parallelFor splits [0, n) into contiguous chunks run by up to w
// goroutines and waits for them.
func parallelFor(n, w int, f func(lo, hi int)) { par.For(n, w, f) }

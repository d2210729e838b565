// Package gradcheck verifies the gradients of autograd operations against
// float64 central differences.
//
// The function under test f maps input variables to an output y. The
// harness draws random weights w of y's shape and compares, element by
// element, the analytic gradient of the scalar projection
//
//	L(x) = Σ_j w_j · y_j(x)
//
// (one backward pass seeded with w) with the numeric one. The loss is
// accumulated in float64 and the derivative is estimated in float64 from
// central differences at steps h and h/2 combined by Richardson
// extrapolation:
//
//	D(h) = (L(x+h) - L(x-h)) / (x+h - x-h)
//	∂L/∂x ≈ (r²·D(h/r) - D(h)) / (r² - 1),  r ≈ 2
//
// whose truncation error is O(h⁴). Tensors hold float32, so the steps
// actually taken are measured after rounding the perturbed inputs to
// float32. An element passes when |analytic - numeric| <= Atol +
// Rtol·|numeric|.
//
// The harness also checks that f computes the same output with a nil tape
// (no-grad mode) as with a recording tape, that Backward empties the tape
// and that neither pass modifies the inputs.
package gradcheck

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// Func is the computation under test. It must be deterministic and must
// record on tp (which is nil in no-grad evaluations) through autograd
// operations only.
type Func func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var

// Options configures Check. The zero value selects every default.
type Options struct {
	// Step is the largest finite-difference step h (default 1e-2). Inputs
	// must be at least 2h away from kinks (ReLU at 0, ties of Max, ...).
	Step float64
	// Atol and Rtol are the absolute and relative tolerances (defaults
	// 1e-3 and 1e-2).
	Atol, Rtol float64
	// Seed seeds the projection weights and element sampling (default 1).
	Seed uint64
	// Const lists the indices of inputs that are constants: they do not
	// require a gradient and are not checked.
	Const []int
	// Params are extra leaf variables used by f, such as a layer's
	// weights. Their values are perturbed in place (and restored) and their
	// gradients are checked; their Grad fields are restored afterwards.
	Params []*autograd.Var
	// MaxElems, when positive, checks at most this many randomly chosen
	// elements of each input or parameter (for large layers).
	MaxElems int
}

func (o Options) withDefaults() Options {
	if o.Step == 0 {
		o.Step = 1e-2
	}
	if o.Atol == 0 {
		o.Atol = 1e-3
	}
	if o.Rtol == 0 {
		o.Rtol = 1e-2
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Assert runs Check and fails tb with the report when the check fails.
func Assert(tb testing.TB, f Func, inputs []*tensor.Tensor, opts Options) {
	tb.Helper()
	if err := Check(f, inputs, opts); err != nil {
		tb.Fatal(err)
	}
}

// Check compares the analytic gradients of f with respect to inputs (and
// opts.Params) with float64 central differences. inputs are copied, never
// modified. The error names the worst element: its tensor, index, both
// values and the tolerance.
func Check(f Func, inputs []*tensor.Tensor, opts Options) error {
	opts = opts.withDefaults()
	if opts.Step < 0 || opts.Atol < 0 || opts.Rtol < 0 {
		return fmt.Errorf("gradcheck: negative option in %+v", opts)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))

	isConst := make([]bool, len(inputs))
	for _, c := range opts.Const {
		if c < 0 || c >= len(inputs) {
			return fmt.Errorf("gradcheck: Const index %d out of range for %d inputs", c, len(inputs))
		}
		isConst[c] = true
	}
	vars := make([]*autograd.Var, len(inputs))
	for i, x := range inputs {
		vars[i] = &autograd.Var{Value: x.Clone(), RequiresGrad: !isConst[i], Name: fmt.Sprintf("input %d", i)}
	}
	for i, p := range opts.Params {
		if !p.RequiresGrad {
			return fmt.Errorf("gradcheck: param %d (%v) does not require a gradient", i, p)
		}
		if !p.Value.IsContiguous() {
			return fmt.Errorf("gradcheck: param %d (%v) is not contiguous", i, p)
		}
	}

	// Analytic gradients: one recorded forward, one backward seeded with w.
	savedGrads := make([]*tensor.Tensor, len(opts.Params))
	for i, p := range opts.Params {
		savedGrads[i], p.Grad = p.Grad, nil
	}
	defer func() {
		for i, p := range opts.Params {
			p.Grad = savedGrads[i]
		}
	}()
	tp := autograd.NewTape()
	out := f(tp, vars)
	if out == nil {
		return errors.New("gradcheck: f returned nil")
	}
	y := out.Value.Clone()
	w := tensor.New(y.Shape()...)
	wd := w.Data()
	for i := range wd {
		wd[i] = float32(rng.NormFloat64())
	}
	tp.BackwardWith(out, w)
	if n := tp.Len(); n != 0 {
		return fmt.Errorf("gradcheck: tape holds %d operations after Backward, expected 0", n)
	}
	for i, v := range vars {
		if err := sameValues(inputs[i], v.Value); err != nil {
			return fmt.Errorf("gradcheck: f modified input %d: %w", i, err)
		}
	}

	// No-grad forward must compute the same value.
	y0 := f(nil, vars).Value
	if err := sameValues(y, y0); err != nil {
		return fmt.Errorf("gradcheck: no-grad forward differs from recorded forward: %w", err)
	}

	loss := func() float64 {
		v := f(nil, vars).Value.Contiguous().Data()
		var s float64
		for j, x := range v {
			s += float64(wd[j]) * float64(x)
		}
		return s
	}

	var targets []target
	for i, v := range vars {
		if !isConst[i] {
			targets = append(targets, target{name: v.Name, v: v})
		}
	}
	for i, p := range opts.Params {
		targets = append(targets, target{name: fmt.Sprintf("param %d (%v)", i, p), v: p})
	}

	var worst mismatch
	failures, checked := 0, 0
	for _, tg := range targets {
		data := tg.v.Value.Data()
		var analytic []float32
		if tg.v.Grad != nil {
			if !slices.Equal(tg.v.Grad.Shape(), tg.v.Value.Shape()) {
				return fmt.Errorf("gradcheck: %s: gradient shape %v, value shape %v", tg.name, tg.v.Grad.Shape(), tg.v.Value.Shape())
			}
			analytic = tg.v.Grad.Contiguous().Data()
		}
		for _, e := range sample(len(data), opts.MaxElems, rng) {
			num := numeric(data, e, opts.Step, loss)
			var an float64
			if analytic != nil {
				an = float64(analytic[e])
			}
			checked++
			tol := opts.Atol + opts.Rtol*math.Abs(num)
			diff := math.Abs(an - num)
			excess := diff / tol
			if math.IsNaN(diff) {
				excess = math.Inf(1)
			}
			if excess > 1 {
				failures++
			}
			if excess > worst.excess {
				worst = mismatch{excess: excess, name: tg.name, shape: tg.v.Value.Shape(), elem: e, analytic: an, numeric: num, tol: tol}
			}
		}
	}
	if failures > 0 {
		return fmt.Errorf("gradcheck: %d of %d gradient elements out of tolerance (atol %g, rtol %g, step %g); worst: %s",
			failures, checked, opts.Atol, opts.Rtol, opts.Step, worst)
	}
	return nil
}

type target struct {
	name string
	v    *autograd.Var
}

type mismatch struct {
	excess            float64
	name              string
	shape             []int
	elem              int
	analytic, numeric float64
	tol               float64
}

func (m mismatch) String() string {
	return fmt.Sprintf("%s shape %v index %v: analytic %.6g, numeric %.6g, |diff| %.3g > tolerance %.3g",
		m.name, m.shape, unravel(m.elem, m.shape), m.analytic, m.numeric, math.Abs(m.analytic-m.numeric), m.tol)
}

// numeric estimates ∂L/∂data[e] by Richardson-extrapolated central
// differences, restoring data[e] afterwards.
func numeric(data []float32, e int, h float64, loss func() float64) float64 {
	orig := data[e]
	diff := func(h float64) (d, step float64) {
		xp := float32(float64(orig) + h)
		xm := float32(float64(orig) - h)
		data[e] = xp
		lp := loss()
		data[e] = xm
		lm := loss()
		data[e] = orig
		step = float64(xp) - float64(xm)
		return (lp - lm) / step, step
	}
	d1, s1 := diff(h)
	d2, s2 := diff(h / 2)
	r2 := (s1 / s2) * (s1 / s2)
	return (r2*d2 - d1) / (r2 - 1)
}

// sample returns the element indices to check: all of them, or max
// distinct random ones in increasing order.
func sample(n, max int, rng *rand.Rand) []int {
	if max <= 0 || max >= n {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	perm := rng.Perm(n)[:max]
	// Insertion sort keeps reports in index order; max is small.
	for i := 1; i < len(perm); i++ {
		for j := i; j > 0 && perm[j] < perm[j-1]; j-- {
			perm[j], perm[j-1] = perm[j-1], perm[j]
		}
	}
	return perm
}

func sameValues(a, b *tensor.Tensor) error {
	if !slices.Equal(a.Shape(), b.Shape()) {
		return fmt.Errorf("shapes %v and %v", a.Shape(), b.Shape())
	}
	ad, bd := a.Contiguous().Data(), b.Contiguous().Data()
	for i := range ad {
		x, y := float64(ad[i]), float64(bd[i])
		if math.Abs(x-y) > 1e-6*(1+math.Abs(x)) || math.IsNaN(x) != math.IsNaN(y) {
			return fmt.Errorf("index %v: %g and %g", unravel(i, a.Shape()), x, y)
		}
	}
	return nil
}

// unravel turns a row-major flat index into a multi-index.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

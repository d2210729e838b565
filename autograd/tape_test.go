package autograd_test

import (
	"runtime"
	"strings"
	"testing"
	"weak"

	ag "github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

func vec(v ...float32) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }

func wantData(t *testing.T, name string, got *tensor.Tensor, want ...float32) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s is nil, want %v", name, want)
	}
	d := got.Contiguous().Data()
	if len(d) != len(want) {
		t.Fatalf("%s = %v, want %v", name, d, want)
	}
	for i := range d {
		if diff := d[i] - want[i]; diff > 1e-6 || diff < -1e-6 {
			t.Fatalf("%s = %v, want %v", name, d, want)
		}
	}
}

func wantPanic(t *testing.T, substr string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", substr)
		}
		if msg, _ := r.(string); !strings.Contains(msg, substr) {
			t.Fatalf("panic %v, want one containing %q", r, substr)
		}
	}()
	f()
}

func TestNoGrad(t *testing.T) {
	x := ag.Param(vec(1, 2, 3), "x")
	var tp *ag.Tape // nil: no-grad mode
	y := ag.SumAll(tp, ag.Exp(tp, ag.Mul(tp, x, x)))
	if y.RequiresGrad {
		t.Fatal("output of a nil tape requires a gradient")
	}
	if tp.Len() != 0 {
		t.Fatalf("nil tape Len = %d", tp.Len())
	}

	// A recording tape records nothing when no input requires a gradient.
	tp = ag.NewTape()
	c := ag.Const(vec(1, 2, 3))
	z := ag.SumAll(tp, ag.Exp(tp, c))
	if z.RequiresGrad || tp.Len() != 0 {
		t.Fatalf("constant expression recorded: RequiresGrad %v, Len %d", z.RequiresGrad, tp.Len())
	}
	wantPanic(t, "nil tape", func() { (*ag.Tape)(nil).Backward(y) })
}

func TestDetach(t *testing.T) {
	x := ag.Param(vec(1, 2, 3), "x")
	tp := ag.NewTape()
	// d/dx Σ x·stop(x) = stop(x) = x, not 2x.
	tp.Backward(ag.SumAll(tp, ag.Mul(tp, x, ag.Detach(x))))
	wantData(t, "x.Grad", x.Grad, 1, 2, 3)

	d := x.Detach()
	if d.RequiresGrad || d.Value != x.Value {
		t.Fatalf("Detach: RequiresGrad %v, shares value %v", d.RequiresGrad, d.Value == x.Value)
	}
}

func TestGradAccumulation(t *testing.T) {
	x := ag.Param(vec(1, 2, 3), "x")
	tp := ag.NewTape()
	step := func() { tp.Backward(ag.SumAll(tp, ag.Square(tp, x))) }
	step()
	wantData(t, "x.Grad after one pass", x.Grad, 2, 4, 6)
	step()
	wantData(t, "x.Grad after two passes", x.Grad, 4, 8, 12)
	x.ZeroGrad()
	step()
	wantData(t, "x.Grad after ZeroGrad", x.Grad, 2, 4, 6)
}

// TestGradNotAliased checks that gradients handed over without a copy
// (AccumulateGradOwned) never end up shared between two variables.
func TestGradNotAliased(t *testing.T) {
	a, b := ag.Param(vec(1, 2), "a"), ag.Param(vec(3, 4), "b")
	tp := ag.NewTape()
	tp.Backward(ag.SumAll(tp, ag.AddScalar(tp, ag.Add(tp, a, b), 1)))
	wantData(t, "a.Grad", a.Grad, 1, 1)
	wantData(t, "b.Grad", b.Grad, 1, 1)
	tp.Backward(ag.SumAll(tp, ag.MulScalar(tp, a, 5)))
	wantData(t, "a.Grad", a.Grad, 6, 6)
	wantData(t, "b.Grad", b.Grad, 1, 1)

	// Concat hands slices of one buffer to its inputs.
	c, d := ag.Param(vec(1, 2), "c"), ag.Param(vec(3), "d")
	tp.Backward(ag.SumAll(tp, ag.Concat(tp, 0, c, d)))
	tp.Backward(ag.SumAll(tp, ag.MulScalar(tp, c, 2)))
	tp.Backward(ag.SumAll(tp, ag.MulScalar(tp, d, 3)))
	wantData(t, "c.Grad", c.Grad, 3, 3)
	wantData(t, "d.Grad", d.Grad, 4)
}

func TestBackwardReleasesGraph(t *testing.T) {
	x := ag.Param(vec(1, 2, 3), "x")
	tp := ag.NewTape()
	// Build the graph in a function so that only the tape refers to the
	// intermediates afterwards.
	mid := func() weak.Pointer[ag.Var] {
		h := ag.Exp(tp, ag.MulScalar(tp, x, 2))
		loss := ag.SumAll(tp, h)
		if tp.Len() != 3 {
			t.Fatalf("tape Len = %d before Backward, want 3", tp.Len())
		}
		tp.Backward(loss)
		return weak.Make(h)
	}()
	if tp.Len() != 0 {
		t.Fatalf("tape Len = %d after Backward, want 0", tp.Len())
	}
	runtime.GC()
	if mid.Value() != nil {
		t.Fatal("intermediate variable still reachable after Backward")
	}
	if x.Grad == nil {
		t.Fatal("leaf gradient missing")
	}
}

func TestBackwardNonScalarPanics(t *testing.T) {
	tp := ag.NewTape()
	y := ag.Exp(tp, ag.Param(tensor.New(2, 3), "x"))
	wantPanic(t, "has 6 elements, expected 1", func() { tp.Backward(y) })
}

func TestBackwardWith(t *testing.T) {
	x := ag.Param(vec(1, 2, 3), "x")
	tp := ag.NewTape()
	tp.BackwardWith(ag.MulScalar(tp, x, 3), vec(1, 10, 100))
	wantData(t, "x.Grad", x.Grad, 3, 30, 300)
}

func TestAccumulateGrad(t *testing.T) {
	v := ag.Param(tensor.New(2, 2), "v")
	g := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	ag.AccumulateGrad(v, g.T()) // strided view, copied
	wantData(t, "after AccumulateGrad", v.Grad, 1, 3, 2, 4)
	if &v.Grad.Data()[0] == &g.Data()[0] {
		t.Fatal("AccumulateGrad kept the caller's tensor")
	}
	ag.AccumulateGrad(v, g)
	wantData(t, "after second AccumulateGrad", v.Grad, 2, 5, 5, 8)

	w := ag.Param(tensor.New(2, 2), "w")
	ag.AccumulateGradOwned(w, g)
	if w.Grad != g {
		t.Fatal("AccumulateGradOwned copied a contiguous gradient")
	}
	h := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	ag.AccumulateGradOwned(w, h.T())
	wantData(t, "after owned strided", w.Grad, 2, 5, 5, 8)

	c := ag.Const(tensor.New(2, 2))
	ag.AccumulateGrad(c, g)
	if c.Grad != nil {
		t.Fatal("constant received a gradient")
	}
	wantPanic(t, "gradient of shape [4] for w[2 2]", func() { ag.AccumulateGrad(w, tensor.New(4)) })
}

package gradcheck_test

import (
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/tensor"
)

// cube is y = x³ written directly on the tape; gradScale scales the
// backward (1 is correct) so that broken gradients can be simulated.
func cube(gradScale float32) gradcheck.Func {
	return func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		x := in[0]
		xd := x.Value.Contiguous().Data()
		y := tensor.New(x.Shape()...)
		yd := y.Data()
		for i, v := range xd {
			yd[i] = v * v * v
		}
		return tp.Record(y, func(out *autograd.Var) {
			g := out.Grad.Contiguous().Data()
			dx := tensor.New(x.Shape()...)
			d := dx.Data()
			for i, v := range xd {
				d[i] = gradScale * 3 * v * v * g[i]
			}
			autograd.AccumulateGradOwned(x, dx)
		}, x)
	}
}

// affine is y = w*x + b elementwise with w and b as params.
func affine(w, b *autograd.Var) gradcheck.Func {
	return func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
		x := in[0]
		xd, wd, bd := x.Value.Data(), w.Value.Data(), b.Value.Data()
		y := tensor.New(x.Shape()...)
		yd := y.Data()
		for i := range yd {
			yd[i] = wd[i]*xd[i] + bd[i]
		}
		return tp.Record(y, func(out *autograd.Var) {
			g := out.Grad.Data()
			dx, dw := tensor.New(x.Shape()...), tensor.New(x.Shape()...)
			for i := range g {
				dx.Data()[i] = g[i] * wd[i]
				dw.Data()[i] = g[i] * xd[i]
			}
			autograd.AccumulateGradOwned(x, dx)
			autograd.AccumulateGradOwned(w, dw)
			autograd.AccumulateGrad(b, out.Grad)
		}, x, w, b)
	}
}

func vec(v ...float32) *tensor.Tensor { return tensor.FromSlice(v, len(v)) }

func TestCheck(t *testing.T) {
	x := tensor.FromSlice([]float32{0.5, -1.25, 2, 0.1, -0.7, 1.5}, 2, 3)
	tests := []struct {
		name    string
		f       gradcheck.Func
		opts    gradcheck.Options
		wantErr string // empty: must pass
	}{
		{name: "correct", f: cube(1)},
		{name: "correct sampled", f: cube(1), opts: gradcheck.Options{MaxElems: 3}},
		{name: "wrong gradient", f: cube(1.1), wantErr: "input 0 shape [2 3] index [0 2]"},
		{name: "const input not checked", f: cube(1.1), opts: gradcheck.Options{Const: []int{0}}},
		{name: "bad const index", f: cube(1), opts: gradcheck.Options{Const: []int{3}}, wantErr: "Const index 3 out of range"},
		{name: "not recorded", f: func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
			return cube(1)(nil, in)
		}, wantErr: "out of tolerance"},
		{name: "modifies input", f: func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
			y := cube(1)(tp, in)
			if tp != nil {
				in[0].Value.Data()[4] = 7
			}
			return y
		}, wantErr: "f modified input 0: index [1 1]"},
		{name: "no-grad differs", f: func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
			y := cube(1)(tp, in)
			if tp == nil {
				y.Value = y.Value.Clone()
				y.Value.Data()[1] += 1
			}
			return y
		}, wantErr: "no-grad forward differs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := gradcheck.Check(tc.f, []*tensor.Tensor{x}, tc.opts)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Check passed, want error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckDoesNotModifyInputs(t *testing.T) {
	x := vec(1, 2, 3)
	gradcheck.Assert(t, cube(1), []*tensor.Tensor{x}, gradcheck.Options{})
	for i, want := range []float32{1, 2, 3} {
		if got := x.Data()[i]; got != want {
			t.Fatalf("input[%d] = %g after Check, want %g", i, got, want)
		}
	}
}

func TestCheckParams(t *testing.T) {
	w := autograd.Param(vec(0.3, -2, 1.7), "w")
	b := autograd.Param(vec(0.1, 0.2, -0.3), "b")
	old := vec(9, 9, 9)
	b.Grad = old
	gradcheck.Assert(t, affine(w, b), []*tensor.Tensor{vec(1, -0.5, 2)}, gradcheck.Options{Params: []*autograd.Var{w, b}})
	if b.Grad != old || w.Grad != nil {
		t.Fatalf("param gradients not restored: w.Grad %v, b.Grad %v", w.Grad, b.Grad)
	}
	if got := w.Value.Data()[1]; got != -2 {
		t.Fatalf("param value not restored: %g", got)
	}

	// A param that does not require a gradient is a usage error.
	frozen := autograd.Const(vec(1, 1, 1))
	err := gradcheck.Check(affine(frozen, b), []*tensor.Tensor{vec(1, 2, 3)}, gradcheck.Options{Params: []*autograd.Var{frozen}})
	if err == nil || !strings.Contains(err.Error(), "does not require a gradient") {
		t.Fatalf("got %v, want a 'does not require a gradient' error", err)
	}
}

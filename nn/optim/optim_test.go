package optim

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
)

// fixture is testdata/optim.json, written by gen_fixtures.py with PyTorch.
type fixture struct {
	Shapes  map[string][]int
	Init    map[string][]float32
	Grads   []map[string][]float32
	Configs map[string]struct {
		Optimizer string
		Hyper     map[string]any
		Params    map[string][]float64
	}
}

// paramOrder is the order gen_fixtures.py passes the parameters in.
var paramOrder = []string{"0.weight", "0.bias", "1.weight", "1.bias", "2.weight"}

func loadFixture(t testing.TB) *fixture {
	t.Helper()
	b, err := os.ReadFile("testdata/optim.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

func (f *fixture) params() []*autograd.Var {
	ps := make([]*autograd.Var, len(paramOrder))
	for i, n := range paramOrder {
		ps[i] = autograd.Param(tensor.FromSlice(append([]float32(nil), f.Init[n]...), f.Shapes[n]...), n)
	}
	return ps
}

func (f *fixture) setGrads(ps []*autograd.Var, step int) {
	for i, n := range paramOrder {
		ps[i].Grad = tensor.FromSlice(append([]float32(nil), f.Grads[step][n]...), f.Shapes[n]...)
	}
}

func num(h map[string]any, k string) float64 {
	v, _ := h[k].(float64)
	return v
}

// newFromFixture builds the Go optimizer matching a fixture configuration.
func newFromFixture(t testing.TB, kind string, h map[string]any, ps []*autograd.Var) Optimizer {
	t.Helper()
	var (
		o   Optimizer
		err error
	)
	nesterov, _ := h["nesterov"].(bool)
	switch kind {
	case "SGD":
		o, err = NewSGD(ps, SGDConfig{LR: num(h, "lr"), Momentum: num(h, "momentum"), Dampening: num(h, "dampening"), Nesterov: nesterov, WeightDecay: num(h, "weight_decay")})
	case "Adam", "AdamW":
		cfg := AdamConfig{LR: num(h, "lr"), Eps: num(h, "eps"), WeightDecay: num(h, "weight_decay")}
		if betas, ok := h["betas"].([]any); ok {
			cfg.Beta1, cfg.Beta2 = betas[0].(float64), betas[1].(float64)
		}
		if kind == "Adam" {
			o, err = NewAdam(ps, cfg)
		} else {
			o, err = NewAdamW(ps, cfg)
		}
	case "LARS":
		clip, _ := h["clip_lr"].(bool)
		o, err = NewLARS(ps, LARSConfig{LR: num(h, "lr"), Momentum: num(h, "momentum"), Nesterov: nesterov, WeightDecay: num(h, "weight_decay"), Eta: num(h, "eta"), ClipLR: clip})
	default:
		t.Fatalf("unknown optimizer %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestTorchParity runs 5 steps of every configuration and compares the
// parameters with PyTorch's: the error must be within 1e-4 of the total
// change of the parameter tensor (a relative error on the update, which is
// stricter than one on the parameters).
func TestTorchParity(t *testing.T) {
	f := loadFixture(t)
	if len(f.Configs) < 9 {
		t.Fatalf("fixture has %d configurations", len(f.Configs))
	}
	for name, c := range f.Configs {
		t.Run(name, func(t *testing.T) {
			ps := f.params()
			o := newFromFixture(t, c.Optimizer, c.Hyper, ps)
			for s := range f.Grads {
				f.setGrads(ps, s)
				o.Step()
			}
			var worst float64
			for i, n := range paramOrder {
				got, want := ps[i].Value.Data(), c.Params[n]
				var change, maxErr float64
				for j := range want {
					change = math.Max(change, math.Abs(want[j]-float64(f.Init[n][j])))
					maxErr = math.Max(maxErr, math.Abs(float64(got[j])-want[j]))
				}
				if change == 0 {
					t.Fatalf("%s: parameter %s did not move in the fixture", name, n)
				}
				if maxErr > 1e-4*change+1e-7 {
					t.Errorf("%s: %s differs from PyTorch by %.3g (update size %.3g)", name, n, maxErr, change)
				}
				worst = math.Max(worst, maxErr/change)
			}
			t.Logf("%s: worst error / update size = %.2g", name, worst)
		})
	}
}

// TestStateDictResume checks that 2 steps, a save and a load into a fresh
// optimizer, then 3 more steps give the same parameters as 5 steps.
func TestStateDictResume(t *testing.T) {
	f := loadFixture(t)
	for _, name := range []string{"sgd_nesterov_wd", "adam_wd", "adamw", "lars"} {
		t.Run(name, func(t *testing.T) {
			c := f.Configs[name]
			ref := f.params()
			o := newFromFixture(t, c.Optimizer, c.Hyper, ref)
			for s := range f.Grads {
				f.setGrads(ref, s)
				o.Step()
			}
			ps := f.params()
			o1 := newFromFixture(t, c.Optimizer, c.Hyper, ps)
			for s := range 2 {
				f.setGrads(ps, s)
				o1.Step()
			}
			state := o1.StateDict()
			if len(state) == 0 {
				t.Fatal("empty state dict")
			}
			o2 := newFromFixture(t, c.Optimizer, c.Hyper, ps)
			if err := o2.LoadStateDict(state); err != nil {
				t.Fatal(err)
			}
			for s := 2; s < len(f.Grads); s++ {
				f.setGrads(ps, s)
				o2.Step()
			}
			for i := range ps {
				if d := maxAbsDiff(ps[i].Value.Data(), ref[i].Value.Data()); d != 0 {
					t.Errorf("parameter %s differs by %g after resuming", paramOrder[i], d)
				}
			}
		})
	}
}

func TestLoadStateDictErrors(t *testing.T) {
	ps := []*autograd.Var{autograd.Param(tensor.New(2, 3), "w")}
	sgd, _ := NewSGD(ps, SGDConfig{LR: 0.1, Momentum: 0.9})
	adam, _ := NewAdam(ps, AdamConfig{LR: 0.1})
	cases := []struct {
		name  string
		o     Optimizer
		state map[string]*tensor.Tensor
		want  string
	}{
		{"bad key", sgd, map[string]*tensor.Tensor{"momentum_buffer": tensor.New(2, 3)}, "not <index>.<buffer>"},
		{"index", sgd, map[string]*tensor.Tensor{"1.momentum_buffer": tensor.New(2, 3)}, "index below 1"},
		{"unknown", sgd, map[string]*tensor.Tensor{"0.exp_avg": tensor.New(2, 3)}, "unknown buffer"},
		{"shape", sgd, map[string]*tensor.Tensor{"0.momentum_buffer": tensor.New(3, 2)}, "shape [3 2]"},
		{"step", adam, map[string]*tensor.Tensor{"0.step": tensor.Scalar(1.5)}, "non-negative integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.LoadStateDict(c.state)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	ps := []*autograd.Var{autograd.Param(tensor.New(2), "b")}
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"negative lr", func() error { _, err := NewSGD(ps, SGDConfig{LR: -1}); return err }, "lr = -1"},
		{"nan momentum", func() error { _, err := NewSGD(ps, SGDConfig{LR: 1, Momentum: math.NaN()}); return err }, "momentum"},
		{"nesterov", func() error { _, err := NewSGD(ps, SGDConfig{LR: 1, Nesterov: true}); return err }, "Nesterov"},
		{"betas", func() error { _, err := NewAdam(ps, AdamConfig{LR: 1, Beta1: 1}); return err }, "betas"},
		{"duplicate", func() error { _, err := NewAdamW(append(ps, ps[0]), AdamConfig{LR: 1}); return err }, "listed twice"},
		{"nil", func() error { _, err := NewLARS([]*autograd.Var{nil}, LARSConfig{LR: 1}); return err }, "nil"},
		{"strided", func() error {
			_, err := NewSGD([]*autograd.Var{autograd.Param(tensor.New(2, 3).T(), "w")}, SGDConfig{LR: 1})
			return err
		}, "not contiguous"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.err(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestLARSExclusion(t *testing.T) {
	ps := []*autograd.Var{
		autograd.Param(tensor.Ones(2, 2), "0.weight"),
		autograd.Param(tensor.Ones(2), "0.bias"),
		autograd.Param(tensor.Ones(2), "1.weight"), // BatchNorm weight
		autograd.Param(tensor.Ones(1, 2), "head.bias"),
	}
	o, err := NewLARS(ps, LARSConfig{LR: 1, WeightDecay: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{false, true, true, true}
	for i, w := range want {
		if o.Excluded(i) != w {
			t.Errorf("parameter %s excluded = %v, want %v", ps[i].Name, o.Excluded(i), w)
		}
		ps[i].Grad = tensor.Full(0.25, ps[i].Value.Shape()...)
	}
	o.Step()
	// Excluded: plain SGD without decay, p = 1 - 0.25.
	for i := 1; i < 4; i++ {
		if v := ps[i].Value.Data()[0]; v != 0.75 {
			t.Errorf("excluded %s = %v, want 0.75", ps[i].Name, v)
		}
	}
	// Adapted: ‖p‖ = 2, ‖g‖ = 0.5, lars_lr = 1e-3*2/(0.5+1+1e-8), d = (0.25+0.5)*lars_lr.
	lr := 1e-3 * 2 / (0.5 + 0.5*2 + 1e-8)
	if v, want := float64(ps[0].Value.Data()[0]), 1-0.75*lr; math.Abs(v-want) > 1e-7 {
		t.Errorf("adapted weight = %v, want %v", v, want)
	}
}

func TestZeroGradAndSkip(t *testing.T) {
	a := autograd.Param(tensor.Ones(3), "a")
	b := autograd.Param(tensor.Ones(3), "b")
	o, _ := NewSGD([]*autograd.Var{a, b}, SGDConfig{LR: 0.5, Momentum: 0.9, WeightDecay: 0.1})
	a.Grad = tensor.Ones(3)
	o.Step()
	if b.Value.Data()[0] != 1 {
		t.Errorf("parameter without gradient moved to %v", b.Value.Data())
	}
	o.ZeroGrad()
	if a.Grad == nil || a.Grad.Data()[0] != 0 {
		t.Errorf("ZeroGrad: %v", a.Grad)
	}
	if _, ok := o.StateDict()["1.momentum_buffer"]; ok {
		t.Error("state for a parameter that never stepped")
	}
	o.SetLR(0.25)
	if o.LR() != 0.25 {
		t.Errorf("LR() = %v after SetLR(0.25)", o.LR())
	}
}

func BenchmarkStep(b *testing.B) {
	const n = 1 << 20
	for _, kind := range []string{"SGD", "Adam", "LARS"} {
		b.Run(kind, func(b *testing.B) {
			p := autograd.Param(tensor.Ones(1024, n/1024), "w")
			p.Grad = tensor.Full(0.01, 1024, n/1024)
			var o Optimizer
			switch kind {
			case "SGD":
				o, _ = NewSGD([]*autograd.Var{p}, SGDConfig{LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4})
			case "Adam":
				o, _ = NewAdam([]*autograd.Var{p}, AdamConfig{LR: 1e-3})
			case "LARS":
				o, _ = NewLARS([]*autograd.Var{p}, LARSConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4})
			}
			b.SetBytes(4 * n)
			for b.Loop() {
				o.Step()
			}
		})
	}
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

// FuzzLoadStateDict feeds arbitrary keys, shapes and step values to
// LoadStateDict: it must return an error or load, never panic, and a loaded
// state must step.
func FuzzLoadStateDict(f *testing.F) {
	f.Add("0.exp_avg", 2, 3, float32(0.5))
	f.Add("0.step", 1, 1, float32(3))
	f.Add("1.exp_avg_sq", 3, 2, float32(-1))
	f.Add("-1.momentum_buffer", 2, 3, float32(0))
	f.Add("0.", 0, 0, float32(1e30))
	f.Fuzz(func(t *testing.T, key string, r, c int, v float32) {
		if r < 0 || c < 0 || r > 8 || c > 8 {
			return
		}
		ps := []*autograd.Var{autograd.Param(tensor.New(2, 3), "w"), autograd.Param(tensor.New(3), "b")}
		st := tensor.Full(v, r, c)
		if r == 1 && c == 1 {
			st = tensor.Scalar(v)
		}
		adam, _ := NewAdam(ps, AdamConfig{LR: 0.1})
		sgd, _ := NewSGD(ps, SGDConfig{LR: 0.1, Momentum: 0.9})
		for _, o := range []Optimizer{adam, sgd} {
			if err := o.LoadStateDict(map[string]*tensor.Tensor{key: st}); err != nil {
				continue
			}
			for _, p := range ps {
				p.Grad = tensor.Ones(p.Value.Shape()...)
			}
			o.Step()
		}
	})
}

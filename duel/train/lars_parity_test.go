package train

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// larsFixture is testdata/lars_solo.json, written by gen_lars_fixtures.py
// with PyTorch 1.13 and torchvision 0.14.
type larsFixture struct {
	Params []struct {
		Part, Name string
		Shape      []int
		Excluded   bool
	}
	Subset []struct{ Part, Name string }
	LR     float64
	Warmup int
	Total  int
	// Momentum and WD are the optimizer's settings.
	Momentum, WD float64
	StepLR       []float64 `json:"step_lr"`
	Init         [][]float32
	Grads        [][][]float32
	Variants     map[string]struct {
		Eta    float64
		ClipLR bool `json:"clip_lr"`
		Params [][]float64
	}
}

// TestLARSMatchesSoloLearn builds BYOL on a full-width ResNet-18 as Train
// does (parameters named per part, newOptimizer over the method's
// parameters, the rate of each step from the warm-up and cosine schedule)
// with --optimizer lars, and checks against solo-learn's LARS on the same
// model in PyTorch:
//
//   - the parameters are torchvision's and solo-learn's, in the same
//     order, of the same shapes, and LARS leaves out of the adaptation and
//     the weight decay exactly those solo-learn's exclude_bias_n_norm does
//     (the one-dimensional ones: every bias and BatchNorm parameter);
//   - four steps on a subset of them (BatchNorm weights and biases, a
//     head's weight and biases; the others without gradient) give
//     solo-learn's parameters with eta 1e-3 and no clip_lr, its LARS
//     defaults and its ImageNet scripts; and with --lars-eta 0.02
//     --lars-clip, what its CIFAR and ImageNet-100 scripts set.
func TestLARSMatchesSoloLearn(t *testing.T) {
	b, err := os.ReadFile("testdata/lars_solo.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx larsFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Variants) != 2 || len(fx.Grads) != len(fx.StepLR) {
		t.Fatalf("fixture: %d variants, %d gradients for %d rates", len(fx.Variants), len(fx.Grads), len(fx.StepLR))
	}
	build := func(t *testing.T) (*Config, []*autograd.Var, []string) {
		c := tinyConfig(t, "byol") // heads of width 32 with BatchNorm
		c.Arch = "resnet18"
		c.Optimizer, c.LR, c.Momentum, c.WD = "lars", fx.LR, fx.Momentum, fx.WD
		c.WarmupSteps, c.Steps, c.MinLR = fx.Warmup, fx.Total, 0
		m, err := NewMethodFor(c, MethodSetup{})
		if err != nil {
			t.Fatal(err)
		}
		part := map[*autograd.Var]string{}
		for _, p := range m.Parts() {
			nn.NameParameters(p.Module) // as Train does, before the optimizer
			for _, nv := range nn.NamedParameters(p.Module) {
				part[nv.Var] = p.Prefix
			}
		}
		ps := m.Parameters()
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = part[p]
		}
		return c, ps, parts
	}
	c, ps, parts := build(t)
	opt, err := newOptimizer(c, ps)
	if err != nil {
		t.Fatal(err)
	}
	lars, ok := opt.(*optim.LARS)
	if !ok {
		t.Fatalf("--optimizer lars built %T", opt)
	}
	if len(ps) != len(fx.Params) {
		t.Fatalf("%d parameters, solo-learn's BYOL has %d", len(ps), len(fx.Params))
	}
	for i, p := range ps {
		w := fx.Params[i]
		if parts[i] != w.Part || p.Name != w.Name || !slices.Equal(p.Value.Shape(), w.Shape) {
			t.Errorf("parameter %d: %s/%s %v, solo-learn %s/%s %v", i, parts[i], p.Name, p.Value.Shape(), w.Part, w.Name, w.Shape)
		}
		if lars.Excluded(i) != w.Excluded {
			t.Errorf("parameter %d (%s/%s %v): excluded %v, solo-learn %v", i, parts[i], p.Name, p.Value.Shape(), lars.Excluded(i), w.Excluded)
		}
	}

	for name, v := range fx.Variants {
		t.Run(name, func(t *testing.T) {
			c, ps, parts := build(t)
			// What --optimizer lars runs, with --lars-eta and --lars-clip
			// from the variant (the defaults: solo-learn's LARS defaults).
			c.LARSEta, c.LARSClip = v.Eta, v.ClipLR
			if name == "imagenet" && (v.Eta != defaultLARSEta || v.ClipLR) {
				t.Fatalf("variant imagenet: eta %v clip %v, expected train's defaults", v.Eta, v.ClipLR)
			}
			opt, err := newOptimizer(c, ps)
			if err != nil {
				t.Fatal(err)
			}
			sched, err := optim.CosineWithWarmup(c.LR, c.WarmupSteps, c.Steps, c.MinLR)
			if err != nil {
				t.Fatal(err)
			}
			sub := make([]*autograd.Var, len(fx.Subset))
			for k, s := range fx.Subset {
				for i, p := range ps {
					if parts[i] == s.Part && p.Name == s.Name {
						sub[k] = p
					}
				}
				if sub[k] == nil {
					t.Fatalf("no parameter %s/%s", s.Part, s.Name)
				}
				copy(sub[k].Value.Data(), fx.Init[k])
			}
			for s, gs := range fx.Grads {
				for k, p := range sub {
					p.Grad = tensor.FromSlice(slices.Clone(gs[k]), p.Value.Shape()...)
				}
				opt.SetLR(sched.LR(s)) // as Train, before each step
				if math.Abs(opt.LR()-fx.StepLR[s]) > 1e-12*c.LR {
					t.Errorf("step %d: lr %v, solo-learn %v", s, opt.LR(), fx.StepLR[s])
				}
				opt.Step()
			}
			var worst float64
			for k, p := range sub {
				var change, maxErr float64
				for j, w := range v.Params[k] {
					change = math.Max(change, math.Abs(w-float64(fx.Init[k][j])))
					maxErr = math.Max(maxErr, math.Abs(float64(p.Value.Data()[j])-w))
				}
				if change == 0 {
					t.Fatalf("%s/%s did not move in the fixture", fx.Subset[k].Part, fx.Subset[k].Name)
				}
				if maxErr > 1e-4*change+1e-7 {
					t.Errorf("%s/%s differs from solo-learn by %.3g (update size %.3g)", fx.Subset[k].Part, fx.Subset[k].Name, maxErr, change)
				}
				worst = math.Max(worst, maxErr/change)
			}
			t.Logf("eta %g clip_lr %v: worst error / update size %.2g", v.Eta, v.ClipLR, worst)
		})
	}
}

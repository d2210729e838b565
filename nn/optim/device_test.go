package optim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// The host-less devices the optimizers are checked on: hostlessfused runs
// the CPU's fused steps on its handles and must give the CPU's bits;
// hostless has the core Backend only, so the steps are composed from its
// operations in float32 (step.go) and agree with the CPU's float64
// arithmetic within fallbackTol.
var devices = []struct {
	dev   tensor.Device
	exact bool
}{
	{hostless.FusedDevice, true},
	{hostless.Device, false},
}

// fallbackTol bounds |device - cpu| / (1 + |cpu|) for the generic steps.
// Each element goes through at most 8 float32 operations (AddScaled, scale,
// square, sqrt, divide, add), each rounded to within 2^-24 ≈ 6e-8 of its
// value; the values involved (parameters, gradients, moments, updates) are
// O(1) here, so after 4 steps the difference stays below a few 1e-7.
const fallbackTol = 1e-6

// deviceShapes are the parameter shapes of the device tests: empty ones,
// odd sizes, 1-d ones (excluded by LARS), one above the CPU backend's
// parallel threshold.
var deviceShapes = [][]int{{0}, {1}, {7}, {3, 0}, {5, 13}, {33, 31}, {4, 3, 3, 3}, {70001}, {17}}

// deviceOptimizers are the optimizers checked on the devices.
var deviceOptimizers = []struct {
	name string
	make func([]*autograd.Var) (Optimizer, error)
}{
	{"sgd", func(ps []*autograd.Var) (Optimizer, error) { return NewSGD(ps, SGDConfig{LR: 0.1}) }},
	{"sgd_wd", func(ps []*autograd.Var) (Optimizer, error) { return NewSGD(ps, SGDConfig{LR: 0.1, WeightDecay: 0.05}) }},
	{"sgd_momentum_dampening_wd", func(ps []*autograd.Var) (Optimizer, error) {
		return NewSGD(ps, SGDConfig{LR: 0.05, Momentum: 0.9, Dampening: 0.1, WeightDecay: 1e-2})
	}},
	{"sgd_nesterov_wd", func(ps []*autograd.Var) (Optimizer, error) {
		return NewSGD(ps, SGDConfig{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4})
	}},
	{"lars", func(ps []*autograd.Var) (Optimizer, error) {
		return NewLARS(ps, LARSConfig{LR: 0.3, Momentum: 0.9, WeightDecay: 1e-4, Eta: 0.02})
	}},
	{"lars_clip_nesterov", func(ps []*autograd.Var) (Optimizer, error) {
		return NewLARS(ps, LARSConfig{LR: 0.3, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4, Eta: 0.02, ClipLR: true})
	}},
	{"lars_no_momentum", func(ps []*autograd.Var) (Optimizer, error) {
		return NewLARS(ps, LARSConfig{LR: 0.5, WeightDecay: 1e-3, Eta: 0.05})
	}},
	{"adam", func(ps []*autograd.Var) (Optimizer, error) { return NewAdam(ps, AdamConfig{LR: 1e-2}) }},
	{"adam_wd", func(ps []*autograd.Var) (Optimizer, error) {
		return NewAdam(ps, AdamConfig{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, WeightDecay: 1e-2})
	}},
	{"adamw", func(ps []*autograd.Var) (Optimizer, error) {
		return NewAdamW(ps, AdamConfig{LR: 1e-2, WeightDecay: 5e-2})
	}},
}

// onDevice returns a copy of x on dev.
func onDevice(t *testing.T, x *tensor.Tensor, dev tensor.Device) *tensor.Tensor {
	t.Helper()
	d, err := x.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	if dev != tensor.CPU && x.Device() == dev {
		t.Fatalf("To(%s) did not copy", dev)
	}
	return d
}

// hostValuesOf returns x's values copied to the host.
func hostValuesOf(t *testing.T, x *tensor.Tensor) []float32 {
	t.Helper()
	h, err := x.To(tensor.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return h.Contiguous().Data()
}

// compareValues checks got (from a device) against want (from the CPU):
// the same bits when exact, else within fallbackTol; it returns the
// largest relative difference.
func compareValues(t *testing.T, what string, got, want []float32, exact bool) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var worst float64
	for j := range want {
		if exact {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("%s[%d] = %v, want %v bit for bit", what, j, got[j], want[j])
			}
			continue
		}
		d := math.Abs(float64(got[j])-float64(want[j])) / (1 + math.Abs(float64(want[j])))
		if !(d <= fallbackTol) {
			t.Fatalf("%s[%d] = %v, want %v within %g (relative difference %.3g)", what, j, got[j], want[j], fallbackTol, d)
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// TestStepOnDevices runs every optimizer for 4 steps (the rate changed
// after the second, one parameter without a gradient) on the CPU and on
// the host-less devices, then saves its state, loads it into a fresh
// optimizer over copies of the parameters on the device and takes one more
// step on both sides; parameters and state must match the CPU's after
// every step.
func TestStepOnDevices(t *testing.T) {
	for _, d := range devices {
		for _, oc := range deviceOptimizers {
			t.Run(fmt.Sprintf("%s/%s", d.dev, oc.name), func(t *testing.T) {
				r := rand.New(rand.NewPCG(17, 4))
				cpuPs := make([]*autograd.Var, len(deviceShapes))
				devPs := make([]*autograd.Var, len(deviceShapes))
				for i, sh := range deviceShapes {
					name := fmt.Sprintf("%d.weight", i)
					if len(sh) == 1 {
						name = fmt.Sprintf("%d.bias", i)
					}
					x := tensor.RandN(r, sh...)
					cpuPs[i] = autograd.Param(x, name)
					devPs[i] = autograd.Param(onDevice(t, x, d.dev), name)
				}
				co, err := oc.make(cpuPs)
				if err != nil {
					t.Fatal(err)
				}
				do, err := oc.make(devPs)
				if err != nil {
					t.Fatal(err)
				}
				var worst float64
				check := func(step string) {
					for i := range cpuPs {
						worst = math.Max(worst, compareValues(t, fmt.Sprintf("%s: parameter %d", step, i),
							hostValuesOf(t, devPs[i].Value), cpuPs[i].Value.Data(), d.exact))
						if devPs[i].Value.Device() != d.dev {
							t.Fatalf("%s: parameter %d moved to %s", step, i, devPs[i].Value.Device())
						}
					}
					cs, ds := co.StateDict(), do.StateDict()
					if !slices.Equal(sortedKeys(cs), sortedKeys(ds)) {
						t.Fatalf("%s: state keys %v, want %v", step, sortedKeys(ds), sortedKeys(cs))
					}
					for k, v := range cs {
						if ds[k].Device() != tensor.CPU {
							t.Fatalf("%s: state %s on %s, want a host copy", step, k, ds[k].Device())
						}
						worst = math.Max(worst, compareValues(t, step+": state "+k, ds[k].Data(), v.Data(), d.exact))
					}
				}
				noGrad := len(deviceShapes) - 1
				for s := 0; s < 4; s++ {
					if s == 2 {
						co.SetLR(co.LR() / 2)
						do.SetLR(do.LR() / 2)
					}
					for i, sh := range deviceShapes {
						if i == noGrad {
							continue
						}
						g := tensor.RandN(r, sh...)
						cpuPs[i].Grad = g
						devPs[i].Grad = onDevice(t, g, d.dev)
					}
					co.Step()
					do.Step()
					check(fmt.Sprintf("step %d", s+1))
				}
				for k := range do.StateDict() {
					if strings.HasPrefix(k, fmt.Sprintf("%d.", noGrad)) {
						t.Errorf("parameter %d without a gradient has state %s", noGrad, k)
					}
				}

				// Resume on the device from the CPU's state, one more step.
				resPs := make([]*autograd.Var, len(devPs))
				for i, p := range devPs {
					resPs[i] = autograd.Param(p.Value.Clone(), p.Name)
					if p.Grad != nil {
						p.Grad.Zero()
					}
				}
				ro, err := oc.make(resPs)
				if err != nil {
					t.Fatal(err)
				}
				ro.SetLR(co.LR())
				if err := ro.LoadStateDict(co.StateDict()); err != nil {
					t.Fatal(err)
				}
				do, devPs = ro, resPs
				for i, sh := range deviceShapes {
					if i == noGrad {
						continue
					}
					g := tensor.RandN(r, sh...)
					cpuPs[i].Grad = g
					devPs[i].Grad = onDevice(t, g, d.dev)
				}
				co.Step()
				do.Step()
				check("resumed step")
				if !d.exact {
					t.Logf("largest relative difference from the CPU: %.3g", worst)
				}
			})
		}
	}
}

func sortedKeys(m map[string]*tensor.Tensor) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestZeroGradOnDevices checks that ZeroGrad clears gradients on a device
// through its backend.
func TestZeroGradOnDevices(t *testing.T) {
	for _, d := range devices {
		p := autograd.Param(onDevice(t, tensor.Ones(3, 5), d.dev), "w")
		p.Grad = onDevice(t, tensor.Full(2, 3, 5), d.dev)
		o, err := NewSGD([]*autograd.Var{p}, SGDConfig{LR: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		o.ZeroGrad()
		if s := tensor.SumAll(tensor.Abs(p.Grad)); s != 0 || p.Grad.Device() != d.dev {
			t.Errorf("%s: ZeroGrad left %v on %s", d.dev, s, p.Grad.Device())
		}
	}
}

// TestEMAOnDevices checks that EMA on both host-less devices, fused or
// composed of a scale and an add-scaled, gives the CPU's bits.
func TestEMAOnDevices(t *testing.T) {
	for _, d := range devices {
		r := rand.New(rand.NewPCG(5, 9))
		var ct, co, dt, do []*autograd.Var
		for i, sh := range deviceShapes {
			x, y := tensor.RandN(r, sh...), tensor.RandN(r, sh...)
			name := fmt.Sprint(i)
			ct, co = append(ct, autograd.Param(x, name)), append(co, autograd.Param(y, name))
			dt, do = append(dt, autograd.Param(onDevice(t, x, d.dev), name)), append(do, autograd.Param(onDevice(t, y, d.dev), name))
		}
		for _, m := range []float64{0.99, 0.75, 0, 0.999} {
			EMA(ct, co, m)
			EMA(dt, do, m)
			for i := range ct {
				compareValues(t, fmt.Sprintf("%s: EMA(%v) target %d", d.dev, m, i), hostValuesOf(t, dt[i].Value), ct[i].Value.Data(), true)
			}
		}
	}
}

// TestTorchParityOnDevices runs the PyTorch fixtures on the host-less
// devices with TestTorchParity's tolerance.
func TestTorchParityOnDevices(t *testing.T) {
	f := loadFixture(t)
	for _, d := range devices {
		for name, c := range f.Configs {
			t.Run(fmt.Sprintf("%s/%s", d.dev, name), func(t *testing.T) {
				ps := f.params()
				for _, p := range ps {
					p.Value = onDevice(t, p.Value, d.dev)
				}
				o := newFromFixture(t, c.Optimizer, c.Hyper, ps)
				for s := range f.Grads {
					f.setGrads(ps, s)
					for _, p := range ps {
						p.Grad = onDevice(t, p.Grad, d.dev)
					}
					o.Step()
				}
				for i, n := range paramOrder {
					got, want := hostValuesOf(t, ps[i].Value), c.Params[n]
					var change, maxErr float64
					for j := range want {
						change = math.Max(change, math.Abs(want[j]-float64(f.Init[n][j])))
						maxErr = math.Max(maxErr, math.Abs(float64(got[j])-want[j]))
					}
					if maxErr > 1e-4*change+1e-7 {
						t.Errorf("%s: %s differs from PyTorch by %.3g (update size %.3g)", name, n, maxErr, change)
					}
				}
			})
		}
	}
}

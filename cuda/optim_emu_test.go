package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/nn/optim"
	"github.com/duel-ssl/duel/tensor"
)

// emuDevice serves tensors on "cudaemu:0" with the CUDA backend on the CPU
// emulator (registered once per test process under its own name, so that
// it never clashes with a real "cuda" registration).
type emuDevice struct{ *Backend }

// Name returns "cudaemu".
func (emuDevice) Name() string { return "cudaemu" }

var emuRegistered sync.Once

// emuTensorDevice registers the emulated backend and returns its device.
func emuTensorDevice(t *testing.T) tensor.Device {
	t.Helper()
	// NewEmulator's skips, checked here too: a skip inside Do would mark
	// the registration done without registering anything.
	cudatest.SkipWithoutEmulator(t)
	var err error
	emuRegistered.Do(func() {
		var b *Backend
		if b, err = newBackend(cudatest.NewEmulator(t), 64); err == nil {
			tensor.Register(emuDevice{b})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tensor.Lookup("cudaemu"); err != nil {
		t.Fatal(err)
	}
	return "cudaemu:0"
}

// TestOptimizersEmulated runs nn/optim's steps on the CUDA backend (on the
// emulator), which implements tensor.OptimizerBackend (optim.cu): nn/optim
// dispatches to its fused steps, which must agree with the CPU's within
// 1e-6 * (1 + |x|) (testOptimizers checks the kernels' ULPs; this checks
// the dispatch, the state nn/optim keeps on the device and the EMA).
func TestOptimizersEmulated(t *testing.T) {
	dev := emuTensorDevice(t)
	if _, ok := tensor.Backend(emuDevice{}).(tensor.OptimizerBackend); !ok {
		t.Fatal("the CUDA backend does not implement tensor.OptimizerBackend")
	}
	shapes := [][]int{{0}, {7}, {5, 13}, {300}}
	makers := []struct {
		name string
		make func([]*autograd.Var) (optim.Optimizer, error)
	}{
		{"sgd_nesterov_wd", func(ps []*autograd.Var) (optim.Optimizer, error) {
			return optim.NewSGD(ps, optim.SGDConfig{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 5e-4})
		}},
		{"lars", func(ps []*autograd.Var) (optim.Optimizer, error) {
			return optim.NewLARS(ps, optim.LARSConfig{LR: 0.3, Momentum: 0.9, WeightDecay: 1e-4, Eta: 0.02})
		}},
		{"adamw", func(ps []*autograd.Var) (optim.Optimizer, error) {
			return optim.NewAdamW(ps, optim.AdamConfig{LR: 1e-2, WeightDecay: 5e-2})
		}},
	}
	to := func(x *tensor.Tensor, d tensor.Device) *tensor.Tensor {
		y, err := x.To(d)
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	compare := func(what string, got, want *tensor.Tensor) {
		g, w := to(got, tensor.CPU).Data(), want.Data()
		for j := range w {
			if d := math.Abs(float64(g[j])-float64(w[j])) / (1 + math.Abs(float64(w[j]))); !(d <= 1e-6) {
				t.Fatalf("%s[%d] = %v on the emulator, %v on the CPU", what, j, g[j], w[j])
			}
		}
	}
	for _, mk := range makers {
		r := rand.New(rand.NewPCG(2, 8))
		var cps, dps []*autograd.Var
		for i, sh := range shapes {
			x := tensor.RandN(r, sh...)
			cps = append(cps, autograd.Param(x, fmt.Sprint(i)))
			dps = append(dps, autograd.Param(to(x, dev), fmt.Sprint(i)))
		}
		co, err := mk.make(cps)
		if err != nil {
			t.Fatal(err)
		}
		do, err := mk.make(dps)
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 2; s++ {
			for i, sh := range shapes {
				g := tensor.RandN(r, sh...)
				cps[i].Grad, dps[i].Grad = g, to(g, dev)
			}
			co.Step()
			do.Step()
			for i := range cps {
				compare(fmt.Sprintf("%s step %d parameter %d", mk.name, s+1, i), dps[i].Value, cps[i].Value)
			}
		}
	}
	r := rand.New(rand.NewPCG(4, 4))
	var ct, co, dt, do []*autograd.Var
	for i, sh := range shapes {
		x, y := tensor.RandN(r, sh...), tensor.RandN(r, sh...)
		ct, co = append(ct, autograd.Param(x, fmt.Sprint(i))), append(co, autograd.Param(y, fmt.Sprint(i)))
		dt, do = append(dt, autograd.Param(to(x, dev), fmt.Sprint(i))), append(do, autograd.Param(to(y, dev), fmt.Sprint(i)))
	}
	optim.EMA(ct, co, 0.99)
	optim.EMA(dt, do, 0.99)
	for i := range ct {
		compare(fmt.Sprintf("EMA target %d", i), dt[i].Value, ct[i].Value)
	}
}

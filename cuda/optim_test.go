package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// optimSizes are the parameter shapes of the optimizer tests: empty, one
// element, odd sizes and more elements than a small grid's threads.
var optimSizes = [][]int{{0}, {1}, {7}, {5, 13}, {1000}, {4099}}

// optimCases are the steps of the optimizer tests with their tolerance in
// float32 ULPs against the CPU backend: SGD, Adam and the EMA are the
// CPU's arithmetic operation for operation (0), LARS's norms are summed in
// another order (the trust ratio may differ in the last bits of a double,
// which rarely moves a float32 result by one ULP; over three steps the
// state carries it, hence 4).
var optimCases = []struct {
	name string
	ulps int64
	step func(b tensor.OptimizerBackend, w, g, s1, s2 tensor.Operand, first bool, t int64)
}{
	{"sgd", 0, func(b tensor.OptimizerBackend, w, g, _, _ tensor.Operand, first bool, _ int64) {
		b.SGDStep(w, g, tensor.Operand{}, tensor.SGDArgs{LR: 0.1, First: first})
	}},
	{"sgd_momentum_wd_dampening", 0, func(b tensor.OptimizerBackend, w, g, buf, _ tensor.Operand, first bool, _ int64) {
		b.SGDStep(w, g, buf, tensor.SGDArgs{LR: 0.05, WeightDecay: 5e-4, Momentum: 0.9, Dampening: 0.1, First: first})
	}},
	{"sgd_nesterov", 0, func(b tensor.OptimizerBackend, w, g, buf, _ tensor.Operand, first bool, _ int64) {
		b.SGDStep(w, g, buf, tensor.SGDArgs{LR: 0.05, WeightDecay: 1e-4, Momentum: 0.9, Nesterov: true, First: first})
	}},
	{"lars", 4, func(b tensor.OptimizerBackend, w, g, buf, _ tensor.Operand, first bool, _ int64) {
		b.LARSStep(w, g, buf, tensor.LARSArgs{SGD: tensor.SGDArgs{LR: 0.3, WeightDecay: 1e-4, Momentum: 0.9, First: first}, Eta: 0.02, Eps: 1e-8})
	}},
	{"lars_clip_nesterov", 4, func(b tensor.OptimizerBackend, w, g, buf, _ tensor.Operand, first bool, _ int64) {
		b.LARSStep(w, g, buf, tensor.LARSArgs{SGD: tensor.SGDArgs{LR: 0.3, WeightDecay: 1e-4, Momentum: 0.9, Nesterov: true, First: first}, Eta: 0.02, Eps: 1e-8, ClipLR: true})
	}},
	{"lars_no_momentum", 4, func(b tensor.OptimizerBackend, w, g, _, _ tensor.Operand, first bool, _ int64) {
		b.LARSStep(w, g, tensor.Operand{}, tensor.LARSArgs{SGD: tensor.SGDArgs{LR: 0.3, WeightDecay: 1e-6, First: first}, Eta: 0.001})
	}},
	{"lars_excluded", 0, func(b tensor.OptimizerBackend, w, g, buf, _ tensor.Operand, first bool, _ int64) {
		b.LARSStep(w, g, buf, tensor.LARSArgs{SGD: tensor.SGDArgs{LR: 0.3, WeightDecay: 1e-4, Momentum: 0.9, First: first}, Eta: 0.02, Excluded: true})
	}},
	{"adam", 0, func(b tensor.OptimizerBackend, w, g, m, v tensor.Operand, _ bool, t int64) {
		b.AdamStep(w, g, m, v, tensor.AdamArgs{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: t})
	}},
	{"adam_l2", 0, func(b tensor.OptimizerBackend, w, g, m, v tensor.Operand, _ bool, t int64) {
		b.AdamStep(w, g, m, v, tensor.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-6, WeightDecay: 1e-2, Step: t})
	}},
	{"adamw", 0, func(b tensor.OptimizerBackend, w, g, m, v tensor.Operand, _ bool, t int64) {
		b.AdamStep(w, g, m, v, tensor.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 5e-2, Decoupled: true, Step: t})
	}},
	{"ema", 0, func(b tensor.OptimizerBackend, w, g, _, _ tensor.Operand, _ bool, _ int64) {
		b.EMA(w, g, 0.996)
	}},
}

// ulpDiff returns the distance in float32 ULPs between a and b (0 for two
// NaNs; -0 and +0 are one apart).
func ulpDiff(a, b float32) int64 {
	if math.IsNaN(float64(a)) && math.IsNaN(float64(b)) {
		return 0
	}
	ord := func(f float32) int64 {
		u := int64(math.Float32bits(f))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31)) - 1
		}
		return u
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return d
}

// ulpClose reports the first element of got more than ulps float32 ULPs
// from want, and returns the largest distance.
func ulpClose(t testing.TB, what string, got, want []float32, ulps int64) int64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	var worst int64
	for i := range got {
		d := ulpDiff(got[i], want[i])
		if d > ulps {
			t.Fatalf("%s: element %d = %v, want %v (CPU): %d ULPs apart, tolerance %d", what, i, got[i], want[i], d, ulps)
		}
		worst = max(worst, d)
	}
	return worst
}

// testOptimizers runs three steps of each of optimCases on be and on the
// CPU backend from the same parameters and state, with fresh gradients at
// every step, and compares the parameters and the state within the case's
// ULPs, on optimSizes at element offsets inside their buffers.
func testOptimizers(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.OptimizerBackend)
	for _, tc := range optimCases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 5))
			var worst int64
			for _, shape := range optimSizes {
				n := 1
				for _, s := range shape {
					n *= s
				}
				w := layerRandn(r, n, 1, 0)
				s1, s2 := layerRandn(r, n, 0.1, 0), layerRandn(r, n, 0.01, 0.02) // v > 0 for Adam
				cw, c1, c2 := append([]float32(nil), w...), append([]float32(nil), s1...), append([]float32(nil), s2...)
				dw, d1, d2 := layerDevOp(be, w, 3, shape...), layerDevOp(be, s1, 1, shape...), layerDevOp(be, s2, 0, shape...)
				for step := int64(1); step <= 3; step++ {
					g := layerRandn(r, n, 0.5, 0)
					tc.step(cpu, layerHostOp(cw, shape...), layerHostOp(g, shape...), layerHostOp(c1, shape...), layerHostOp(c2, shape...), step == 1, step)
					tc.step(be, dw, layerDevOp(be, g, 2, shape...), d1, d2, step == 1, step)
					what := fmt.Sprintf("%v step %d", shape, step)
					worst = max(worst, ulpClose(t, what+" param", layerOut(be, dw), cw, tc.ulps))
					worst = max(worst, ulpClose(t, what+" state 1", layerOut(be, d1), c1, tc.ulps))
					worst = max(worst, ulpClose(t, what+" state 2", layerOut(be, d2), c2, tc.ulps))
				}
			}
			if worst > 0 {
				t.Logf("largest difference from the CPU: %d ULPs", worst)
			}
		})
	}
}

// TestOptimizerEmulated runs the optimizer kernels (optim.cu) on the CPU
// emulator through the backend, against the CPU backend.
func TestOptimizerEmulated(t *testing.T) {
	onEmulator(t, testOptimizers)
}

// TestOptimizerKernel runs the optimizer kernels on the GPU against the
// CPU backend, at three block sizes.
func TestOptimizerKernel(t *testing.T) {
	onGPU(t, testOptimizers)
}

// TestOptimizerFakeDriver runs TestOptimizerKernel in a child process
// whose driver is the fake libcuda (internal/cudatest.FakeDriver): the
// optimizer kernels through Device and the driver bindings, without a GPU.
func TestOptimizerFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestOptimizerKernel$", "TestOptimizerKernel")
}

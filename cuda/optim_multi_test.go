package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

// multiSizes returns the parameter sizes of the multi-tensor tests on be:
// empty ones among the others, one element, odd sizes and sizes around
// the kernels' chunk (block*multiChunkThreads elements), so that chunks
// end inside and at the end of tensors.
func multiSizes(be *Backend) []int {
	c := be.block * multiChunkThreads
	return []int{0, 1, 7, c - 1, c, 0, c + 1, 3*c + 5, 65, 0}
}

// multiCases are the multi-parameter calls checked, each with the
// single-parameter step it must equal bit for bit and the number of state
// operands it updates.
var multiCases = []struct {
	name   string
	states int
	multi  func(b tensor.MultiOptimizerBackend, w, g []tensor.Operand, s [][]tensor.Operand, first bool, t int64)
	single func(b tensor.OptimizerBackend, w, g tensor.Operand, s []tensor.Operand, first bool, t int64)
}{
	{"sgd", 0,
		func(b tensor.MultiOptimizerBackend, w, g []tensor.Operand, _ [][]tensor.Operand, first bool, _ int64) {
			b.SGDSteps(w, g, nil, tensor.SGDArgs{LR: 0.1, WeightDecay: 1e-3, First: first})
		},
		func(b tensor.OptimizerBackend, w, g tensor.Operand, _ []tensor.Operand, first bool, _ int64) {
			b.SGDStep(w, g, tensor.Operand{}, tensor.SGDArgs{LR: 0.1, WeightDecay: 1e-3, First: first})
		}},
	{"sgd_momentum_dampening", 1,
		func(b tensor.MultiOptimizerBackend, w, g []tensor.Operand, s [][]tensor.Operand, first bool, _ int64) {
			b.SGDSteps(w, g, s[0], tensor.SGDArgs{LR: 0.05, WeightDecay: 5e-4, Momentum: 0.9, Dampening: 0.1, First: first})
		},
		func(b tensor.OptimizerBackend, w, g tensor.Operand, s []tensor.Operand, first bool, _ int64) {
			b.SGDStep(w, g, s[0], tensor.SGDArgs{LR: 0.05, WeightDecay: 5e-4, Momentum: 0.9, Dampening: 0.1, First: first})
		}},
	{"sgd_nesterov", 1,
		func(b tensor.MultiOptimizerBackend, w, g []tensor.Operand, s [][]tensor.Operand, first bool, _ int64) {
			b.SGDSteps(w, g, s[0], tensor.SGDArgs{LR: 0.05, WeightDecay: 1e-4, Momentum: 0.9, Nesterov: true, First: first})
		},
		func(b tensor.OptimizerBackend, w, g tensor.Operand, s []tensor.Operand, first bool, _ int64) {
			b.SGDStep(w, g, s[0], tensor.SGDArgs{LR: 0.05, WeightDecay: 1e-4, Momentum: 0.9, Nesterov: true, First: first})
		}},
	{"adam", 2,
		func(b tensor.MultiOptimizerBackend, w, g []tensor.Operand, s [][]tensor.Operand, _ bool, t int64) {
			b.AdamSteps(w, g, s[0], s[1], tensor.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-6, WeightDecay: 1e-2, Step: t})
		},
		func(b tensor.OptimizerBackend, w, g tensor.Operand, s []tensor.Operand, _ bool, t int64) {
			b.AdamStep(w, g, s[0], s[1], tensor.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-6, WeightDecay: 1e-2, Step: t})
		}},
	{"adamw", 2,
		func(b tensor.MultiOptimizerBackend, w, g []tensor.Operand, s [][]tensor.Operand, _ bool, t int64) {
			b.AdamSteps(w, g, s[0], s[1], tensor.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 5e-2, Decoupled: true, Step: t})
		},
		func(b tensor.OptimizerBackend, w, g tensor.Operand, s []tensor.Operand, _ bool, t int64) {
			b.AdamStep(w, g, s[0], s[1], tensor.AdamArgs{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 5e-2, Decoupled: true, Step: t})
		}},
	{"ema", 0,
		func(b tensor.MultiOptimizerBackend, w, g []tensor.Operand, _ [][]tensor.Operand, _ bool, _ int64) {
			b.EMAs(w, g, 0.996)
		},
		func(b tensor.OptimizerBackend, w, g tensor.Operand, _ []tensor.Operand, _ bool, _ int64) {
			b.EMA(w, g, 0.996)
		}},
	{"zero", 0,
		func(b tensor.MultiOptimizerBackend, w, _ []tensor.Operand, _ [][]tensor.Operand, _ bool, _ int64) {
			b.ZeroAll(w)
		},
		func(_ tensor.OptimizerBackend, w, _ tensor.Operand, _ []tensor.Operand, _ bool, _ int64) {
			clear(w.Buf.Host[w.Offset : w.Offset+w.Shape[0]])
		}},
}

// multiGuard is the number of elements of garbage (NaN) before and after
// each operand of the multi-tensor tests, which the kernels must leave.
const multiGuard = 5

// multiOperand copies d to fresh device storage of be between guards of
// NaN and returns it as a 1-d operand.
func multiOperand(be *Backend, d []float32) tensor.Operand {
	all := make([]float32, 2*multiGuard+len(d))
	for i := range all {
		all[i] = float32(math.NaN())
	}
	copy(all[multiGuard:], d)
	b := be.Alloc(len(all))
	be.CopyIn(b, 0, all)
	return tensor.Operand{Buf: b, Offset: multiGuard, Shape: []int{len(d)}, Strides: []int{1}}
}

// multiCheck compares the operand o of be with the CPU's values want, bit
// for bit, and checks its guards.
func multiCheck(t *testing.T, be *Backend, what string, o tensor.Operand, want []float32) {
	t.Helper()
	all := make([]float32, 2*multiGuard+len(want))
	be.CopyOut(all, o.Buf, 0)
	for i, v := range all {
		if i >= multiGuard && i < multiGuard+len(want) {
			if j := i - multiGuard; math.Float32bits(v) != math.Float32bits(want[j]) {
				t.Fatalf("%s: element %d = %v, want %v (the single-parameter step on the CPU)", what, j, v, want[j])
			}
		} else if !math.IsNaN(float64(v)) {
			t.Fatalf("%s: guard element %d written (%v): the kernel wrote outside the operand", what, i-multiGuard, v)
		}
	}
}

// testMultiOptimizers runs three steps of each of multiCases on be, all
// of multiSizes' parameters in one call, and the single-parameter steps on
// the CPU backend from the same values, with fresh gradients at every
// step, and compares every parameter and state bit for bit.
func testMultiOptimizers(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.OptimizerBackend)
	sizes := multiSizes(be)
	for _, tc := range multiCases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 11))
			T := len(sizes)
			w, dw := make([][]float32, T), make([]tensor.Operand, T)
			s := make([][][]float32, tc.states)
			ds := make([][]tensor.Operand, tc.states)
			for k := range ds {
				s[k], ds[k] = make([][]float32, T), make([]tensor.Operand, T)
			}
			for i, n := range sizes {
				w[i] = layerRandn(r, n, 1, 0)
				dw[i] = multiOperand(be, w[i])
				for k := range ds {
					s[k][i] = layerRandn(r, n, 0.01, 0.02) // v > 0 for Adam
					ds[k][i] = multiOperand(be, s[k][i])
				}
			}
			for step := int64(1); step <= 3; step++ {
				dg := make([]tensor.Operand, T)
				for i, n := range sizes {
					g := layerRandn(r, n, 0.5, 0)
					dg[i] = multiOperand(be, g)
					hs := make([]tensor.Operand, tc.states)
					for k := range hs {
						hs[k] = layerHostOp(s[k][i], n)
					}
					tc.single(cpu, layerHostOp(w[i], n), layerHostOp(g, n), hs, step == 1, step)
				}
				tc.multi(be, dw, dg, ds, step == 1, step)
				for i, n := range sizes {
					what := fmt.Sprintf("step %d, tensor %d of %d elements", step, i, n)
					multiCheck(t, be, what+" param", dw[i], w[i])
					for k := range ds {
						multiCheck(t, be, fmt.Sprintf("%s state %d", what, k), ds[k][i], s[k][i])
					}
				}
			}
		})
	}
	t.Run("empty", func(t *testing.T) { // no tensor, and only empty ones: no launch, no failure
		be.SGDSteps(nil, nil, nil, tensor.SGDArgs{LR: 0.1})
		e := multiOperand(be, nil)
		be.ZeroAll([]tensor.Operand{e, e})
		be.EMAs([]tensor.Operand{e}, []tensor.Operand{e}, 0.9)
		multiCheck(t, be, "empty operand", e, nil)
	})
}

// TestMultiOptimizerEmulated runs the multi-tensor kernels (optim.cu's
// *_multi_f32) on the CPU emulator through the backend.
func TestMultiOptimizerEmulated(t *testing.T) {
	onEmulator(t, testMultiOptimizers)
}

// TestMultiOptimizerKernel runs the multi-tensor kernels on the GPU, at
// three block sizes.
func TestMultiOptimizerKernel(t *testing.T) {
	onGPU(t, testMultiOptimizers)
}

// TestMultiOptimizerFakeDriver runs TestMultiOptimizerKernel through the
// fake libcuda (the driver bindings, the table's upload), without a GPU.
func TestMultiOptimizerFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestMultiOptimizerKernel$", "TestMultiOptimizerKernel")
}

// TestMultiListsMismatch checks that lists that do not pair up are refused
// with a message naming the call.
func TestMultiListsMismatch(t *testing.T) {
	cases := []struct {
		name string
		call func(b tensor.MultiOptimizerBackend)
	}{
		{"SGDSteps", func(b tensor.MultiOptimizerBackend) {
			b.SGDSteps(make([]tensor.Operand, 2), make([]tensor.Operand, 1), nil, tensor.SGDArgs{})
		}},
		{"SGDSteps", func(b tensor.MultiOptimizerBackend) {
			b.SGDSteps(make([]tensor.Operand, 1), make([]tensor.Operand, 1), nil, tensor.SGDArgs{Momentum: 0.9})
		}},
		{"AdamSteps", func(b tensor.MultiOptimizerBackend) {
			b.AdamSteps(make([]tensor.Operand, 1), make([]tensor.Operand, 1), make([]tensor.Operand, 1), nil, tensor.AdamArgs{})
		}},
		{"EMAs", func(b tensor.MultiOptimizerBackend) { b.EMAs(make([]tensor.Operand, 3), nil, 0.9) }},
	}
	for _, be := range []tensor.MultiOptimizerBackend{layerCPU(t).(tensor.MultiOptimizerBackend), &Backend{}} {
		for _, tc := range cases {
			func() {
				defer func() {
					msg := fmt.Sprint(recover())
					if want := "tensor: " + tc.name + ": lists of"; len(msg) < len(want) || msg[:len(want)] != want {
						t.Errorf("%T %s: panic %q, want one starting %q", be, tc.name, msg, want)
					}
				}()
				tc.call(be)
			}()
		}
	}
}

// TestMultiBadOperand checks that an operand that is not dense or whose
// size differs from its parameter's is refused with a message naming the
// call, the list and the index.
func TestMultiBadOperand(t *testing.T) {
	be, err := newBackend(cudatest.NewHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	op := func(n int) tensor.Operand {
		return tensor.Operand{Buf: be.Alloc(n), Shape: []int{n}, Strides: []int{1}}
	}
	strided := tensor.Operand{Buf: be.Alloc(8), Shape: []int{4}, Strides: []int{2}}
	for _, tc := range []struct {
		call func()
		want string
	}{
		{func() {
			be.SGDSteps([]tensor.Operand{op(4), op(5)}, []tensor.Operand{op(4), op(4)}, nil, tensor.SGDArgs{LR: 0.1})
		},
			"cuda: Backend.SGDSteps: grad 1 has 4 elements"},
		{func() { be.ZeroAll([]tensor.Operand{op(3), strided}) }, "cuda: Backend.ZeroAll: operand 1 of shape [4] strides [2] is not dense"},
	} {
		func() {
			defer func() {
				if msg := fmt.Sprint(recover()); !strings.HasPrefix(msg, tc.want) {
					t.Errorf("panic %q, want one starting %q", msg, tc.want)
				}
			}()
			tc.call()
		}()
	}
}

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// testUnaryGrad checks UnaryGrad of be (unarygrad.cu) against the CPU
// backend's (kernels/elemgrad) for every operation on activationSizes,
// with zeros, signed zeros, infinities and negative inputs: bit for bit,
// PowScalar (a double pow rounded once) within one ULP.
func testUnaryGrad(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.UnaryGradBackend)
	r := rand.New(rand.NewPCG(14, 2))
	ops := []struct {
		op tensor.UnaryOp
		p  float32
	}{{tensor.OpSquare, 0}, {tensor.OpAbs, 0}, {tensor.OpExp, 0}, {tensor.OpLog, 0}, {tensor.OpSqrt, 0},
		{tensor.OpPowScalar, 2.5}, {tensor.OpPowScalar, -0.5}, {tensor.OpRelu, 0}, {tensor.OpTanh, 0}, {tensor.OpSigmoid, 0}}
	var worstPow int64
	for _, shape := range activationSizes {
		n := 1
		for _, s := range shape {
			n *= s
		}
		t.Run(fmt.Sprint(shape), func(t *testing.T) {
			in, g := activationData(r, n, nil), activationData(r, n, nil)
			for i := range in {
				if i%7 == 4 {
					in[i] = float32(math.Abs(float64(in[i]))) // positive inputs for Log, Sqrt, Pow
				}
			}
			din, dg := layerDevOp(be, in, 3, shape...), layerDevOp(be, g, 1, shape...)
			for _, o := range ops {
				want := make([]float32, n)
				cpu.UnaryGrad(o.op, layerHostOp(want, shape...), layerHostOp(g, shape...), layerHostOp(in, shape...), o.p)
				got := layerDevOp(be, make([]float32, n), 2, shape...)
				be.UnaryGrad(o.op, got, dg, din, o.p)
				what := fmt.Sprintf("UnaryGrad %v p=%v", o.op, o.p)
				if o.op == tensor.OpPowScalar {
					worstPow = max(worstPow, ulpClose(t, what, layerOut(be, got), want, 1))
				} else {
					bitsEqual(t, what, layerOut(be, got), want)
				}
			}
		})
	}
	t.Logf("PowScalar: largest difference from the CPU %d ULPs; the others bit for bit", worstPow)
}

// testIndex checks TakeAlong and PutAlong of be (index.cu) against the CPU
// backend's along every axis of several shapes (one-element and empty
// axes included), bit for bit.
func testIndex(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.IndexBackend)
	r := rand.New(rand.NewPCG(3, 30))
	for _, shape := range [][]int{{1}, {7}, {3, 4, 5}, {2, 1, 9}, {0, 4}, {4, 0, 3}, {33, 65}} {
		for axis := range shape {
			t.Run(fmt.Sprintf("%v_axis%d", shape, axis), func(t *testing.T) {
				outer, n, inner, total := rowsGeom("test", shape, axis)
				lanes := outer * inner
				if n == 0 && lanes > 0 {
					return // no index can be valid
				}
				idx := make([]int, lanes)
				for i := range idx {
					idx[i] = r.IntN(n)
				}
				src := activationData(r, total, nil)
				lshape := append(append([]int(nil), shape[:axis]...), shape[axis+1:]...)
				want := make([]float32, lanes)
				cpu.TakeAlong(layerHostOp(want, lshape...), layerHostOp(src, shape...), axis, idx)
				got := layerDevOp(be, make([]float32, lanes), 1, lshape...)
				be.TakeAlong(got, layerDevOp(be, src, 2, shape...), axis, idx)
				bitsEqual(t, "TakeAlong", layerOut(be, got), want)
				vals := activationData(r, lanes, nil)
				base := activationData(r, total, nil)
				wantP := append([]float32(nil), base...)
				cpu.PutAlong(layerHostOp(wantP, shape...), layerHostOp(vals, lshape...), axis, idx)
				gotP := layerDevOp(be, base, 3, shape...)
				be.PutAlong(gotP, layerDevOp(be, vals, 0, lshape...), axis, idx)
				bitsEqual(t, "PutAlong", layerOut(be, gotP), wantP)
			})
		}
	}
}

// testLinear checks the Linear passes of be (Gemm plus linear.cu) against
// the CPU backend's (kernels/linear): the products within 1e-5 of their
// largest element (the GEMMs sum in other orders), the bias add and the
// bias gradient bit for bit; with and without bias, stored and
// accumulated, zero rows (the CPU refuses zero inputs).
func testLinear(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.LinearBackend)
	r := rand.New(rand.NewPCG(8, 80))
	var worst float64
	for _, s := range [][3]int{{1, 1, 1}, {3, 5, 2}, {17, 33, 9}, {0, 4, 3}, {70, 20, 130}} {
		rows, in, out := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("%dx%d_to_%d", rows, in, out), func(t *testing.T) {
			x, w, b := layerRandn(r, rows*in, 1, 0), layerRandn(r, out*in, 1, 0), layerRandn(r, out, 1, 0)
			dy := layerRandn(r, rows*out, 1, 0)
			dx, dw, db := layerDevOp(be, x, 1, rows, in), layerDevOp(be, w, 0, out, in), layerDevOp(be, b, 2, out)
			ddy := layerDevOp(be, dy, 3, rows, out)
			for _, bias := range []bool{false, true} {
				want := make([]float32, rows*out)
				got := layerDevOp(be, layerRandn(r, rows*out, 1, 0), 1, rows, out)
				if bias {
					cpu.LinearForward(layerHostOp(want, rows, out), layerHostOp(x, rows, in), layerHostOp(w, out, in), layerHostOp(b, out))
					be.LinearForward(got, dx, dw, db)
				} else {
					cpu.LinearForward(layerHostOp(want, rows, out), layerHostOp(x, rows, in), layerHostOp(w, out, in), tensor.Operand{})
					be.LinearForward(got, dx, dw, tensor.Operand{})
				}
				worst = max(worst, gradClose(t, fmt.Sprintf("LinearForward bias=%v", bias), layerOut(be, got), want, 1e-5))
			}
			for _, acc := range []bool{false, true} {
				old := layerRandn(r, rows*in, 1, 0)
				want := append([]float32(nil), old...)
				cpu.LinearInputGrad(layerHostOp(want, rows, in), layerHostOp(dy, rows, out), layerHostOp(w, out, in), acc)
				got := layerDevOp(be, old, 2, rows, in)
				be.LinearInputGrad(got, ddy, dw, acc)
				worst = max(worst, gradClose(t, fmt.Sprintf("LinearInputGrad acc=%v", acc), layerOut(be, got), want, 1e-5))
				oldW := layerRandn(r, out*in, 1, 0)
				wantW := append([]float32(nil), oldW...)
				cpu.LinearWeightGrad(layerHostOp(wantW, out, in), layerHostOp(dy, rows, out), layerHostOp(x, rows, in), acc)
				gotW := layerDevOp(be, oldW, 0, out, in)
				be.LinearWeightGrad(gotW, ddy, dx, acc)
				worst = max(worst, gradClose(t, fmt.Sprintf("LinearWeightGrad acc=%v", acc), layerOut(be, gotW), wantW, 1e-5))
			}
			oldB := layerRandn(r, out, 1, 0)
			wantB := append([]float32(nil), oldB...)
			cpu.LinearBiasGrad(layerHostOp(wantB, out), layerHostOp(dy, rows, out))
			gotB := layerDevOp(be, oldB, 1, out)
			be.LinearBiasGrad(gotB, ddy)
			bitsEqual(t, "LinearBiasGrad", layerOut(be, gotB), wantB)
		})
	}
	t.Logf("products: largest difference from the CPU %g of the largest element; bias passes bit for bit", worst)
}

// testGrads runs testUnaryGrad, testIndex and testLinear.
func testGrads(t *testing.T, be *Backend) {
	t.Run("UnaryGrad", func(t *testing.T) { testUnaryGrad(t, be) })
	t.Run("Index", func(t *testing.T) { testIndex(t, be) })
	t.Run("Linear", func(t *testing.T) { testLinear(t, be) })
}

// TestGradsEmulated runs UnaryGrad (unarygrad.cu), TakeAlong/PutAlong
// (index.cu) and the Linear passes (linear.cu and the products) on the
// CPU emulator through the backend, against the CPU backend.
func TestGradsEmulated(t *testing.T) {
	onEmulator(t, testGrads)
}

// TestGradsKernel runs them on the GPU against the CPU backend, at three
// block sizes.
func TestGradsKernel(t *testing.T) {
	onGPU(t, testGrads)
}

// TestGradsFakeDriver runs TestGradsKernel in a child process whose driver
// is the fake libcuda.
func TestGradsFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestGradsKernel$", "TestGradsKernel")
}

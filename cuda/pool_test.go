package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// layerCPU returns the CPU backend, the reference of the layer tests.
func layerCPU(t testing.TB) tensor.Backend {
	t.Helper()
	b, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// layerHostOp returns d as a dense host operand of the given shape.
func layerHostOp(d []float32, shape ...int) tensor.Operand {
	return tensor.Operand{Buf: tensor.Buffer{Host: d}, Shape: shape, Strides: contiguous(shape)}
}

// layerDevOp copies d to fresh device storage of be, at element offset off
// (the elements before it hold garbage), as a dense operand of the given
// shape.
func layerDevOp(be *Backend, d []float32, off int, shape ...int) tensor.Operand {
	b := be.Alloc(off + len(d))
	garbage := make([]float32, off)
	for i := range garbage {
		garbage[i] = float32(math.NaN())
	}
	be.CopyIn(b, 0, garbage)
	be.CopyIn(b, off, d)
	return tensor.Operand{Buf: b, Offset: off, Shape: shape, Strides: contiguous(shape)}
}

// layerOut copies the n elements of the dense operand o to the host.
func layerOut(be *Backend, o tensor.Operand) []float32 {
	n := 1
	for _, s := range o.Shape {
		n *= s
	}
	d := make([]float32, n)
	be.CopyOut(d, o.Buf, o.Offset)
	return d
}

// layerRandn returns n normal values times scale plus shift.
func layerRandn(r *rand.Rand, n int, scale, shift float64) []float32 {
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(r.NormFloat64()*scale + shift)
	}
	return d
}

// layerClose reports the first element of got differing from want by more
// than atol + rtol*|want| (NaN only matches NaN).
func layerClose(t testing.TB, what string, got, want []float32, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if !(math.Abs(g-w) <= atol+rtol*math.Abs(w)) {
			t.Fatalf("%s: element %d = %v, want %v (CPU)", what, i, got[i], want[i])
		}
	}
}

// poolCases are the geometries of the pooling tests: odd sizes, padding,
// windows partly outside the plane, ResNet's stem pool and empty batches.
var poolCases = []struct {
	planes, h, w, k, s, p int
	oh, ow                int // adaptive output
}{
	{1, 1, 1, 1, 1, 0, 1, 1},
	{3, 7, 6, 3, 2, 1, 2, 3},
	{2, 8, 8, 2, 2, 0, 3, 3},
	{5, 5, 9, 3, 1, 1, 1, 1},
	{4, 32, 32, 3, 2, 1, 1, 1},
	{6, 13, 11, 3, 3, 1, 5, 4},
	{0, 5, 5, 3, 2, 1, 1, 1},
}

// testPools checks the pooling passes of be against the CPU backend's on
// poolCases: max pooling's outputs and indices bit for bit (both take the
// first maximum), the gradients (stored and accumulated) and the adaptive
// average pooling within float32 rounding (both sum in kernels/pool's
// order, so they agree exactly in practice).
func testPools(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.PoolBackend)
	r := rand.New(rand.NewPCG(12, 1))
	for _, tc := range poolCases {
		oh, ow := (tc.h+2*tc.p-tc.k)/tc.s+1, (tc.w+2*tc.p-tc.k)/tc.s+1
		t.Run(fmt.Sprintf("%dx%dx%d_k%ds%dp%d", tc.planes, tc.h, tc.w, tc.k, tc.s, tc.p), func(t *testing.T) {
			nin, nout := tc.planes*tc.h*tc.w, tc.planes*oh*ow
			g := tensor.PoolGeom{Planes: tc.planes, H: tc.h, W: tc.w, OH: oh, OW: ow}
			x := layerRandn(r, nin, 1, 0)
			for i := 0; i < nin; i += 7 {
				x[i] = x[(i*3)%nin] // ties
			}
			wy, warg := make([]float32, nout), make([]float32, nout)
			cpu.MaxPool2d(layerHostOp(wy, nout), layerHostOp(x, nin), layerHostOp(warg, nout), g, tc.k, tc.s, tc.p)
			dx, y, arg := layerDevOp(be, x, 3, nin), layerDevOp(be, make([]float32, nout), 1, nout), layerDevOp(be, make([]float32, nout), 5, nout)
			be.MaxPool2d(y, dx, arg, g, tc.k, tc.s, tc.p)
			layerClose(t, "MaxPool2d y", layerOut(be, y), wy, 0, 0)
			gotArg := layerOut(be, arg)
			for i := range gotArg {
				if math.Float32bits(gotArg[i]) != math.Float32bits(warg[i]) {
					t.Fatalf("MaxPool2d arg[%d] = %d, want %d", i, int32(math.Float32bits(gotArg[i])), int32(math.Float32bits(warg[i])))
				}
			}
			dy := layerRandn(r, nout, 1, 0)
			for _, acc := range []bool{false, true} {
				old := layerRandn(r, nin, 1, 0)
				want := append([]float32(nil), old...)
				cpu.MaxPool2dBack(layerHostOp(want, nin), layerHostOp(dy, nout), layerHostOp(warg, nout), g, tc.k, tc.s, tc.p, acc)
				got := layerDevOp(be, old, 2, nin)
				be.MaxPool2dBack(got, layerDevOp(be, dy, 0, nout), arg, g, tc.k, tc.s, tc.p, acc)
				layerClose(t, fmt.Sprintf("MaxPool2dBack acc=%v", acc), layerOut(be, got), want, 1e-6, 1e-6)
			}

			ag := tensor.PoolGeom{Planes: tc.planes, H: tc.h, W: tc.w, OH: tc.oh, OW: tc.ow}
			naout := tc.planes * tc.oh * tc.ow
			way := make([]float32, naout)
			cpu.AdaptiveAvgPool2d(layerHostOp(way, naout), layerHostOp(x, nin), ag)
			ay := layerDevOp(be, make([]float32, naout), 0, naout)
			be.AdaptiveAvgPool2d(ay, dx, ag)
			layerClose(t, "AdaptiveAvgPool2d", layerOut(be, ay), way, 1e-6, 1e-6)
			ady := layerRandn(r, naout, 1, 0)
			for _, acc := range []bool{false, true} {
				old := layerRandn(r, nin, 1, 0)
				want := append([]float32(nil), old...)
				cpu.AdaptiveAvgPool2dBack(layerHostOp(want, nin), layerHostOp(ady, naout), ag, acc)
				got := layerDevOp(be, old, 1, nin)
				be.AdaptiveAvgPool2dBack(got, layerDevOp(be, ady, 0, naout), ag, acc)
				layerClose(t, fmt.Sprintf("AdaptiveAvgPool2dBack acc=%v", acc), layerOut(be, got), want, 1e-6, 1e-6)
			}
		})
	}
}

// TestPoolEmulated runs the pooling kernels (pool.cu) on the CPU emulator
// through the backend, against the CPU backend.
func TestPoolEmulated(t *testing.T) {
	onEmulator(t, testPools)
}

// TestPoolKernel runs the pooling kernels on the GPU against the CPU
// backend, at two block sizes.
func TestPoolKernel(t *testing.T) {
	onGPU(t, testPools)
}

// TestLayersFakeDriver runs the pooling and BatchNorm GPU tests in a child
// process whose driver is the fake libcuda (internal/cudatest.FakeDriver):
// the layers' kernels through Device and the driver bindings, without a
// GPU.
func TestLayersFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^(TestPoolKernel|TestBatchNormKernel)$", "TestPoolKernel", "TestBatchNormKernel")
}

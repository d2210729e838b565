package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// rowsTol is the tolerance of the row kernels against the CPU's loops:
// |got - want| <= rowsAtol + rowsRtol·|want|. The kernels compute what
// kernels/rows computes, in the same precisions (float32 maxima and
// exponentials, float64 sums, float32 results), but with CUDA's expf and
// the sums in a block's order: a few float32 ulps.
const rowsRtol, rowsAtol = 1e-5, 1e-6

// closeErr reports the first element of got differing from want by more
// than atol + rtol·|want| (NaN only matching NaN) and returns the largest
// relative difference seen (|got - want| / max(|want|, atol)).
func closeErr(t testing.TB, what string, got, want []float32, atol, rtol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	worst := 0.0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) && math.IsNaN(g) || g == w {
			continue
		}
		d := math.Abs(g - w)
		if !(d <= atol+rtol*math.Abs(w)) {
			t.Fatalf("%s: element %d = %v, want %v (CPU)", what, i, got[i], want[i])
		}
		worst = max(worst, d/max(math.Abs(w), atol))
	}
	return worst
}

// rowsCase is one row-operation shape and axis.
type rowsCase struct {
	shape []int
	axis  int
}

// rowsCases: zero lanes, empty lanes, a single lane, odd sizes, lanes
// longer than a block, middle and first axes (strided lanes) and more
// lanes than a grid.
var rowsCases = []rowsCase{
	{[]int{0, 5}, 1}, {[]int{3, 0}, 1}, {[]int{1, 7}, 1}, {[]int{1, 1}, 1}, {[]int{4, 9}, 1},
	{[]int{5, 33}, 0}, {[]int{2, 3, 37}, 1}, {[]int{3, 1000}, 1}, {[]int{300, 3}, 1}, {[]int{2, 65, 3}, 2},
}

// rowsData returns n values of spread scale, the first tiny ones of them
// (a lane's worth, L2 normalisation's eps branch) scaled to about 1e-14.
func rowsData(r *rand.Rand, n int, scale float64, tiny int) []float32 {
	d := layerRandn(r, n, scale, 0)
	for i := 0; i < tiny && i < n; i++ {
		d[i] *= 1e-14
	}
	return d
}

// testRows checks the row operations of be (rows.cu) against the CPU
// backend's (kernels/rows) on rowsCases, at element offsets inside their
// buffers, forward and backward, within rowsRtol/rowsAtol; it logs the
// largest relative differences seen.
func testRows(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.RowsBackend)
	r := rand.New(rand.NewPCG(21, 4))
	worst := map[string]float64{}
	note := func(name string, e float64) { worst[name] = max(worst[name], e) }
	for _, tc := range rowsCases {
		shape, axis := tc.shape, tc.axis
		n := 1
		for _, s := range shape {
			n *= s
		}
		t.Run(fmt.Sprintf("%v_axis%d", shape, axis), func(t *testing.T) {
			x, g := rowsData(r, n, 3, 0), rowsData(r, n, 1, 0)
			h := func(d []float32) tensor.Operand { return layerHostOp(d, shape...) }
			d := func(d []float32, off int) tensor.Operand { return layerDevOp(be, d, off, shape...) }
			dx, dg := d(x, 3), d(g, 1)

			wy := make([]float32, n)
			cpu.Softmax(h(wy), h(x), axis)
			y := d(make([]float32, n), 2)
			be.Softmax(y, dx, axis)
			note("Softmax", closeErr(t, "Softmax", layerOut(be, y), wy, 1e-30, rowsRtol))
			wdx := make([]float32, n)
			cpu.SoftmaxBack(h(wdx), h(g), h(wy), axis)
			got := d(make([]float32, n), 0)
			be.SoftmaxBack(got, dg, d(wy, 5), axis)
			note("SoftmaxBack", closeErr(t, "SoftmaxBack", layerOut(be, got), wdx, rowsAtol, rowsRtol))

			wl, wp := make([]float32, n), make([]float32, n)
			cpu.LogSoftmax(h(wl), h(wp), h(x), axis)
			l, p := d(make([]float32, n), 1), d(make([]float32, n), 4)
			be.LogSoftmax(l, p, dx, axis)
			note("LogSoftmax", closeErr(t, "LogSoftmax", layerOut(be, l), wl, rowsAtol, rowsRtol))
			note("LogSoftmax p", closeErr(t, "LogSoftmax p", layerOut(be, p), wp, 1e-30, rowsRtol))
			l2 := d(make([]float32, n), 0)
			be.LogSoftmax(l2, tensor.Operand{}, dx, axis)
			note("LogSoftmax", closeErr(t, "LogSoftmax without p", layerOut(be, l2), wl, rowsAtol, rowsRtol))
			cpu.LogSoftmaxBack(h(wdx), h(g), h(wp), axis)
			be.LogSoftmaxBack(got, dg, d(wp, 2), axis)
			note("LogSoftmaxBack", closeErr(t, "LogSoftmaxBack", layerOut(be, got), wdx, rowsAtol, rowsRtol))

			// L2 normalisation: the first lane's norm below eps (its
			// elements about 1e-14, y about 1e-2) when the axis is last.
			tiny := 0
			if axis == len(shape)-1 {
				tiny = shape[axis]
			}
			xz := rowsData(r, n, 2, tiny)
			const eps = 1e-12
			wn := make([]float32, n)
			cpu.L2Normalize(h(wn), h(xz), axis, eps)
			dxz, yn := d(xz, 1), d(make([]float32, n), 3)
			be.L2Normalize(yn, dxz, axis, eps)
			note("L2Normalize", closeErr(t, "L2Normalize", layerOut(be, yn), wn, rowsAtol, rowsRtol))
			cpu.L2NormalizeBack(h(wdx), h(g), h(xz), h(wn), axis, eps)
			be.L2NormalizeBack(got, dg, dxz, d(wn, 0), axis, eps)
			// where the norm is below eps the gradient is g/eps: 1e12 scale
			note("L2NormalizeBack", closeErr(t, "L2NormalizeBack", layerOut(be, got), wdx, rowsAtol, rowsRtol))
		})
	}
	for _, sh := range [][2]int{{0, 5}, {1, 1}, {1, 7}, {6, 9}, {37, 130}, {3, 1000}} {
		n, c := sh[0], sh[1]
		t.Run(fmt.Sprintf("CrossEntropy%dx%d", n, c), func(t *testing.T) {
			x := rowsData(r, n*c, 4, 0)
			targets := make([]int, n)
			for i := range targets {
				targets[i] = r.IntN(c)
			}
			wl, wp := make([]float32, 1), make([]float32, n*c)
			cpu.CrossEntropy(layerHostOp(wl, 1), layerHostOp(wp, n, c), layerHostOp(x, n, c), targets)
			loss, p := layerDevOp(be, make([]float32, 1), 2, 1), layerDevOp(be, make([]float32, n*c), 1, n, c)
			dx := layerDevOp(be, x, 3, n, c)
			be.CrossEntropy(loss, p, dx, targets)
			note("CrossEntropy", closeErr(t, "CrossEntropy loss", layerOut(be, loss), wl, 0, 1e-6))
			note("CrossEntropy p", closeErr(t, "CrossEntropy p", layerOut(be, p), wp, 1e-30, rowsRtol))
			be.CrossEntropy(loss, tensor.Operand{}, dx, targets)
			note("CrossEntropy", closeErr(t, "CrossEntropy loss without p", layerOut(be, loss), wl, 0, 1e-6))
			const scale = 0.37
			cpu.CrossEntropyBack(layerHostOp(wp, n, c), targets, scale)
			be.CrossEntropyBack(p, targets, scale)
			note("CrossEntropyBack", closeErr(t, "CrossEntropyBack", layerOut(be, p), wp, rowsAtol, rowsRtol))
		})
	}
	t.Run("bad target", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "CrossEntropy") {
				t.Errorf("target 3 of 3 classes: panic %v, want one naming CrossEntropy", r)
			}
		}()
		be.CrossEntropy(layerDevOp(be, make([]float32, 1), 0, 1), tensor.Operand{}, layerDevOp(be, make([]float32, 6), 0, 2, 3), []int{0, 3})
	})
	t.Logf("largest relative differences from the CPU: %v", worst)
}

// TestRowsEmulated runs the row kernels (rows.cu) on the CPU emulator
// through the backend, against the CPU backend.
func TestRowsEmulated(t *testing.T) {
	onEmulator(t, testRows)
}

// TestRowsKernel runs the row kernels on the GPU against the CPU backend,
// at three block sizes.
func TestRowsKernel(t *testing.T) {
	onGPU(t, testRows)
}

// TestRowsFakeDriver runs TestRowsKernel in a child process whose driver
// is the fake libcuda: the row kernels through Device and the driver
// bindings, without a GPU.
func TestRowsFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestRowsKernel$", "TestRowsKernel")
}

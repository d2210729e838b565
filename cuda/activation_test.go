package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/tensor"
)

// activationSizes are the element counts of the activation tests: empty,
// one element, odd sizes, a few blocks and more elements than a small
// grid's threads (the grid-stride loop's second pass).
var activationSizes = [][]int{{0}, {1}, {7}, {3, 11}, {2, 3, 5, 7}, {4099}, {8, 64, 33}}

// activationData returns n values with signed zeros, infinities, exact
// cancellations with partner (b = -a) and normal values.
func activationData(r *rand.Rand, n int, partner []float32) []float32 {
	d := layerRandn(r, n, 1, 0)
	for i := range d {
		switch i % 11 {
		case 1:
			d[i] = 0
		case 2:
			d[i] = float32(math.Copysign(0, -1))
		case 3:
			d[i] = float32(math.Inf(1 - 2*(i/11%2)))
		case 5:
			if partner != nil {
				d[i] = -partner[i]
			}
		}
	}
	return d
}

// bitsEqual reports the first element of got whose bits differ from want's.
func bitsEqual(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(isNaN32(got[i]) && isNaN32(want[i])) {
			t.Fatalf("%s: element %d = %v (%#08x), want %v (%#08x) (CPU)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// isNaN32 reports whether v is a NaN. NaNs compare equal in bitsEqual
// whatever their sign and payload: IEEE 754 leaves them to the hardware
// (x86 makes 0xffc00000, NVIDIA GPUs 0x7fffffff), and no result depends
// on them.
func isNaN32(v float32) bool { return v != v }

// testActivations checks the activation passes of be against the CPU
// backend's bit for bit on activationSizes, at element offsets inside
// their buffers: ReLU, AddReLU, and ReLUBack of both outputs stored and
// accumulated.
func testActivations(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.ActivationBackend)
	r := rand.New(rand.NewPCG(12, 3))
	for _, shape := range activationSizes {
		n := 1
		for _, s := range shape {
			n *= s
		}
		t.Run(fmt.Sprint(shape), func(t *testing.T) {
			x := activationData(r, n, nil)
			x2 := activationData(r, n, x)
			wy, wy2 := make([]float32, n), make([]float32, n)
			cpu.ReLU(layerHostOp(wy, shape...), layerHostOp(x, shape...))
			cpu.AddReLU(layerHostOp(wy2, shape...), layerHostOp(x, shape...), layerHostOp(x2, shape...))
			y, y2 := layerDevOp(be, make([]float32, n), 3, shape...), layerDevOp(be, make([]float32, n), 0, shape...)
			dx, dx2 := layerDevOp(be, x, 1, shape...), layerDevOp(be, x2, 5, shape...)
			be.ReLU(y, dx)
			bitsEqual(t, "ReLU", layerOut(be, y), wy)
			be.AddReLU(y2, dx, dx2)
			bitsEqual(t, "AddReLU", layerOut(be, y2), wy2)
			for _, out := range []struct {
				name string
				y    []float32
				dy   tensor.Operand
			}{{"ReLU", wy, y}, {"AddReLU", wy2, y2}} {
				dy := activationData(r, n, nil)
				for _, acc := range []bool{false, true} {
					old := activationData(r, n, dy)
					want := append([]float32(nil), old...)
					cpu.ReLUBack(layerHostOp(want, shape...), layerHostOp(dy, shape...), layerHostOp(out.y, shape...), acc)
					got := layerDevOp(be, old, 2, shape...)
					be.ReLUBack(got, layerDevOp(be, dy, 4, shape...), out.dy, acc)
					bitsEqual(t, fmt.Sprintf("ReLUBack of %s acc=%v", out.name, acc), layerOut(be, got), want)
				}
			}
		})
	}
	t.Run("size mismatch", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "AddReLU") {
				t.Errorf("AddReLU of 3 and 4 elements: panic %v, want one naming AddReLU", r)
			}
		}()
		be.AddReLU(layerDevOp(be, make([]float32, 3), 0, 3), layerDevOp(be, make([]float32, 3), 0, 3), layerDevOp(be, make([]float32, 4), 0, 4))
	})
}

// TestActivationEmulated runs the activation kernels (activation.cu) on
// the CPU emulator through the backend, against the CPU backend.
func TestActivationEmulated(t *testing.T) {
	onEmulator(t, testActivations)
}

// TestActivationKernel runs the activation kernels on the GPU against the
// CPU backend, at three block sizes.
func TestActivationKernel(t *testing.T) {
	onGPU(t, testActivations)
}

// TestActivationFakeDriver runs TestActivationKernel in a child process
// whose driver is the fake libcuda (internal/cudatest.FakeDriver): the
// activation kernels through Device and the driver bindings, without a
// GPU.
func TestActivationFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestActivationKernel$", "TestActivationKernel")
}

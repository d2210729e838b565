package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/backendtest"
)

// topKCases are (m, n, k, levels): values drawn from `levels` quantised
// values (many ties; 3 levels: ties straddle the k-th element, so the
// selection goes down to the column bytes), with signed zeros, infinities
// and NaNs among them. Odd n, k = 1, k = n, m = 0, k = 0, rows longer than
// a block, n above 2^16 (three column bytes), more rows than the grid, and
// k above TopKMax (the host path).
var topKCases = [][4]int{
	{0, 5, 2, 5}, {3, 4, 0, 5}, {1, 1, 1, 5}, {3, 7, 7, 5}, {5, 9, 1, 5}, {4, 33, 5, 3},
	{2, 1000, 200, 3}, {2, 1000, 200, 1 << 20}, {9, 257, 256, 17}, {37, 301, 20, 3},
	{3, 1025, 1024, 7}, {1, 70001, 200, 3}, {700, 12, 5, 4}, {2, 1500, 1100, 9},
}

// testTopK checks be's TopK (topk.cu) against the CPU backend's
// (kernels/topk) bit for bit, values and columns, at offsets inside the
// operands' buffers.
func testTopK(t *testing.T, be *Backend) {
	cpu := layerCPU(t).(tensor.TopKBackend)
	r := rand.New(rand.NewPCG(12, 200))
	for _, tc := range topKCases {
		m, n, k, levels := tc[0], tc[1], tc[2], tc[3]
		t.Run(fmt.Sprintf("%dx%d_k%d_levels%d", m, n, k, levels), func(t *testing.T) {
			x := backendtest.TopKValues(r, m*n, levels, 50)
			wv, wi := make([]float32, m*k), make([]float32, m*k)
			cpu.TopK(layerHostOp(wv, m, k), layerHostOp(wi, m, k), layerHostOp(x, m, n), k)
			v, ix := layerDevOp(be, make([]float32, m*k), 3, m, k), layerDevOp(be, make([]float32, m*k), 1, m, k)
			be.TopK(v, ix, layerDevOp(be, x, 2, m, n), k)
			gv, gi := layerOut(be, v), layerOut(be, ix)
			for i := range wv {
				if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) || math.Float32bits(gi[i]) != math.Float32bits(wi[i]) {
					t.Fatalf("row %d [%d]: (%v, col %d), CPU (%v, col %d)", i/k, i%k,
						gv[i], *(*int32)(unsafe.Pointer(&gi[i])), wv[i], *(*int32)(unsafe.Pointer(&wi[i])))
				}
			}
		})
	}
}

// TestTopKEmulated runs topk.cu on the CPU emulator through the backend,
// against the CPU backend, at blocks of one and three warps.
func TestTopKEmulated(t *testing.T) {
	onEmulator(t, testTopK)
}

// TestTopKKernel runs topk.cu on the GPU against the CPU backend, at
// blocks of 32, 256 and 1024 threads.
func TestTopKKernel(t *testing.T) {
	onGPU(t, testTopK)
}

// TestTopKFakeDriver runs TestTopKKernel in a child process whose driver
// is the fake libcuda: topk.cu through Device and the driver bindings,
// without a GPU.
func TestTopKFakeDriver(t *testing.T) {
	passesOnFakeDriver(t, "^TestTopKKernel$", "TestTopKKernel")
}

// BenchmarkTopK times the selection of the k = 200 largest of each of 256
// rows of 50000 (a CIFAR-10 kNN chunk of similarities) on the GPU, in
// device time per call ("device"), and, for comparison, tensor.TopK's path
// on a backend without the capability: the 256 x 50000 block copied to the
// host and selected by kernels/topk there ("copy+host", wall time). GPU
// only.
func BenchmarkTopK(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	const m, n, k = 256, 50000, 200
	r := rand.New(rand.NewPCG(3, 4))
	x := layerDevOp(be, layerRandn(r, m*n, 0.2, 0), 0, m, n)
	vals, idx := layerDevOp(be, make([]float32, m*k), 0, m, k), layerDevOp(be, make([]float32, m*k), 0, m, k)
	b.Run("device", func(b *testing.B) {
		per := deviceLoop(b, d, func() { be.TopK(vals, idx, x, k) })
		b.ReportMetric(float64(per.Microseconds()), "us/chunk")
	})
	b.Run("copy+host", func(b *testing.B) {
		cpu := layerCPU(b).(tensor.TopKBackend)
		h, hv, hi := make([]float32, m*n), make([]float32, m*k), make([]float32, m*k)
		for b.Loop() {
			be.CopyOut(h, x.Buf, 0)
			cpu.TopK(layerHostOp(hv, m, k), layerHostOp(hi, m, k), layerHostOp(h, m, n), k)
		}
	})
}

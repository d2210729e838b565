package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

// wgProbe runs the layout probes of gemm_wg.cu on be (TCWG, TCWG3, TCWGM,
// TCWGM3, TCWGMS, TCWGS or TCWGP, in
// its precision): one tile (128 or 192 x 256) with K 64, A a selector
// (A[m][k] = 1 where k = m % 64) and B once with B[n][k] = n % 256, once
// with B[n][k] = k (integers every precision holds exactly), so that
// C[m][n] must be n % 256, then m % 64. A wrong fragment layout,
// descriptor or swizzle shows as which row or k an element read; the
// first mismatches are reported with what they read.
func wgProbe(t *testing.T, be *Backend) {
	t.Helper()
	const n, k = 256, 64
	m := be.gemmLaunch().tileM
	a := make([]float32, m*k)
	for i := range m {
		a[i*k+i%k] = 1
	}
	for _, probe := range []struct {
		what string
		b    func(j, kk int) float32
		want func(i, j int) float32
	}{
		{"column n of C reads row n of B", func(j, _ int) float32 { return float32(j % 256) }, func(_, j int) float32 { return float32(j % 256) }},
		{"row m of C reads k = m % 64", func(_, kk int) float32 { return float32(kk) }, func(i, _ int) float32 { return float32(i % k) }},
	} {
		b := make([]float32, n*k)
		for j := range n {
			for kk := range k {
				b[j*k+kk] = probe.b(j, kk)
			}
		}
		ga, gb, gc := be.Alloc(len(a)), be.Alloc(len(b)), be.Alloc(m*n)
		be.CopyIn(ga, 0, a)
		be.CopyIn(gb, 0, b)
		be.Gemm(tensor.GemmArgs{TransB: true, M: m, N: n, K: k, Alpha: 1, A: ga, B: gb, C: gc, LDA: k, LDB: k, LDC: n, Batch: 1})
		c := make([]float32, m*n)
		be.CopyOut(c, gc, 0)
		var bad []string
		for i := range m {
			for j := range n {
				if got, want := c[i*n+j], probe.want(i, j); got != want {
					bad = append(bad, fmt.Sprintf("C[%d][%d] = %v, want %v", i, j, got, want))
				}
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s %s: %d of %d elements wrong: %s", be.gemmKernelName(), probe.what, len(bad), m*n, strings.Join(bad[:min(len(bad), 8)], "; "))
		}
		for _, x := range []tensor.Buffer{ga, gb, gc} {
			be.Release(x)
		}
	}
}

// wgKinds are the TCKernel values of gemm_wg.cu's products.
var wgKinds = []TCKernel{TCWG, TCWG3, TCWGM, TCWGM3, TCWGMS, TCWGS, TCWGP}

// TestGemmWGEmulated runs the layout probes on the CPU emulator's
// gemm_wg_*, gemm_wg3_*, gemm_wgm_*, gemm_wgm3_*, gemm_wgms_*, gemm_wgs_*
// and gemm_wgp_* (TestGemmPrecisionEmulated runs the general products).
func TestGemmWGEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	for _, p := range []Precision{TF32, BF16} {
		for _, k := range wgKinds {
			wgProbe(t, backendOnEmulator(t, e, p, k))
		}
	}
}

// TestGemmWGKernel runs gemm_wg.cu's kernels (TCWG, TCWG3, TCWGM, TCWGM3,
// TCWGMS, TCWGS, then TCWGP, a subtest each) on a GPU
// of compute capability 9.0 (wgmma, sm_90a): the layout probes, then the
// precision tests' products (TestGemmPrecisionKernel leaves TCWG out, so that a
// failure here cannot stop the other kernels' tests: bench/gpu_check.sh
// runs this one in its own process first). GPU only.
func TestGemmWGKernel(t *testing.T) {
	d := needGPU(t)
	for _, p := range []Precision{TF32, BF16} {
		t.Run(p.String(), func(t *testing.T) {
			for _, k := range wgKinds {
				t.Run(k.String(), func(t *testing.T) { // one by one: -test.run .../wgm runs one kind in a process of its own
					be := backendIn(t, d, p, k)
					if !be.gemmLaunch().isWG() {
						t.Skipf("gemm_wg.cu runs on compute capability 9.0 only (%v)", d)
					}
					t.Logf("%v %v: kernel %s", p, k, be.gemmKernelName())
					wgProbe(t, be)
					if err := be.Synchronize(); err != nil {
						t.Fatal(err)
					}
					testGemmPrecision(t, be, 8)
					if err := be.Synchronize(); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// backendIn returns a backend on the GPU d (blocks of 256 threads) in
// precision p with tensor-core kernels k, skipping tb where p runs as
// another precision there.
func backendIn(tb testing.TB, d *Device, p Precision, k TCKernel) *Backend {
	tb.Helper()
	be, err := newBackend(d, 256)
	if err != nil {
		tb.Fatal(err)
	}
	if got := be.SetPrecision(p); got != p {
		tb.Skipf("%v runs as %v on %v", p, got, d)
	}
	be.SetTCKernel(k)
	return be
}

// TestGemmLaunchNoAlloc checks that choosing a product's kernel (every
// Gemm does) allocates nothing, gemm_wg.cu's pair included.
func TestGemmLaunchNoAlloc(t *testing.T) {
	be, err := newBackend(cudatest.NewHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Precision{FP32, TF32, BF16} {
		for _, k := range tcKernels {
			be.SetPrecision(p)
			be.SetTCKernel(k)
			be.gemmLaunch() // the first call opts in
			if n := testing.AllocsPerRun(100, func() { be.gemmLaunch() }); n != 0 {
				t.Errorf("%v %v: gemmLaunch allocates %v times a call", p, k, n)
			}
		}
	}
}

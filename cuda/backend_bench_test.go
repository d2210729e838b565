package cuda

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/duel-ssl/duel/tensor"
)

// BenchmarkGemm times one 1024^3 SGEMM on the GPU and reports GFLOP/s
// (2*M*N*K flops per product). GPU only.
func BenchmarkGemm(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1024
	x, y, z := be.Alloc(n*n), be.Alloc(n*n), be.Alloc(n*n)
	randomFill(be, n*n, x, y)
	g := tensor.GemmArgs{M: n, N: n, K: n, Alpha: 1, A: x, B: y, C: z, LDA: n, LDB: n, LDC: n, Batch: 1}
	per := deviceLoop(b, d, func() { be.Gemm(g) })
	b.ReportMetric(2*n*n*n/per.Seconds()/1e9, "GFLOP/s")
}

// randomFill copies n standard normal values (a fixed seed) into each
// buffer: the products' benchmarks multiply what torch.randn gives the
// peer (bench/gpu_peer.py), not the allocator's zeros, which draw less
// power and can run faster.
func randomFill(be *Backend, n int, bufs ...tensor.Buffer) {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	v := make([]float32, n)
	for _, t := range bufs {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		be.CopyIn(t, 0, v)
	}
}

// BenchmarkAdd times a same-shape 16M-element addition and reports GB/s
// (12 bytes moved per element: two reads, one write). GPU only.
func BenchmarkAdd(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1 << 24
	op := func() tensor.Operand {
		return tensor.Operand{Buf: be.Alloc(n), Shape: []int{n}, Strides: []int{1}}
	}
	x, y, z := op(), op(), op()
	per := deviceLoop(b, d, func() { be.Binary(tensor.OpAdd, z, x, y) })
	b.ReportMetric(12*n/per.Seconds()/1e9, "GB/s")
}

// BenchmarkReduceRows times the sum of the rows of a 4096 x 4096 matrix and
// reports GB/s of input read. GPU only.
func BenchmarkReduceRows(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	const n = 4096
	src := tensor.Operand{Buf: be.Alloc(n * n), Shape: []int{n, n}, Strides: []int{n, 1}}
	dst := tensor.Operand{Buf: be.Alloc(n), Shape: []int{n, 1}, Strides: []int{1, 1}}
	per := deviceLoop(b, d, func() { be.Reduce(tensor.ReduceSum, dst, src) })
	b.ReportMetric(4*n*n/per.Seconds()/1e9, "GB/s")
}

// deviceLoop runs op in b's loop and returns the device time per
// iteration, measured by events recorded on d's stream before and after
// the loop (launches do not wait for their kernels, so the loop's wall
// time is the time to queue them until the queue is full). Before the
// loop op runs for at least 3 calls and 100 ms, then the stream drains:
// the first launch's module load and an idle GPU's clocks stay out of the
// figure (they slow a process's first benchmark markedly: bench/RESULTS.md,
// "NVIDIA H100").
func deviceLoop(b *testing.B, d *Device, op func()) time.Duration {
	for i, until := 0, time.Now().Add(100*time.Millisecond); i < 3 || time.Now().Before(until); i++ {
		op()
		if i%16 == 15 {
			if err := d.Synchronize(); err != nil { // a bounded queue: the clock above is the device's
				b.Fatal(err)
			}
		}
	}
	if err := d.Synchronize(); err != nil {
		b.Fatal(err)
	}
	start, err := d.Record()
	if err != nil {
		b.Fatal(err)
	}
	defer start.Close()
	n := 0
	for b.Loop() {
		op()
		n++
	}
	end, err := d.Record()
	if err != nil {
		b.Fatal(err)
	}
	defer end.Close()
	el, err := d.Elapsed(start, end)
	if err != nil {
		b.Fatal(err)
	}
	return el / time.Duration(max(n, 1))
}

// BenchmarkGemmPrecision times square products of 1024, 2048 and 4096 in every
// precision (tensor cores from compute capability 8.0 on; below it TF32 and
// BF16 fall back to FP32, and say so) and reports GFLOP/s. TF32 and BF16
// run twice: v1 with gemm_tf32/gemm_bf16 (128 x 128 tiles, register
// double buffering) and v2 with gemm_tc2_tf32/gemm_tc2_bf16 (128 x 256
// tiles, 3-stage cp.async pipeline; skipped where the device cannot give
// it its shared memory), e.g. tf32/n4096/v1 and tf32/n4096/v2, and TF32
// also v3 with gemm_tc3_tf32 (v2's factors rounded in registers); on
// compute capability 9.0 both also wg and wg3, gemm_wg.cu (the factors
// packed, then Hopper's wgmma in 128 x 256 or 192 x 256 tiles; the
// packing is timed with it; BenchmarkGemmWGM times the clustered ones)
// and wgp (gemm_wgp_*: the packing inside the product's launch);
// auto is the default's choice at that size (Backend.gemmFor); FP32 is
// fp32/n4096. The factors are random normal values, as torch.randn gives
// bench/gpu_peer.py's (zeros draw less power and can run faster). Where
// the device's peak is known (Device.PeakGFLOPS) it also reports the
// rate as a percentage of it (%peak). GPU only.
func BenchmarkGemmPrecision(b *testing.B) {
	d := needGPU(b)
	for _, p := range []Precision{FP32, TF32, BF16} {
		for _, n := range []int{1024, 2048, 4096} {
			kinds := []TCKernel{TCAuto, TCV1, TCV2, TCWG, TCWG3, TCWGP}
			switch p {
			case FP32:
				kinds = []TCKernel{TCAuto}
			case TF32:
				kinds = append(kinds, TCV3)
			}
			for _, k := range kinds {
				name := fmt.Sprintf("%v/n%d", p, n)
				if p != FP32 {
					name += "/" + k.String()
				}
				b.Run(name, func(b *testing.B) { benchGemm(b, d, p, n, k) })
			}
		}
	}
}

// BenchmarkGemmWGM times gemm_wg.cu's products fed by bulk copies (wgm:
// gemm_wgm_*, wgm3: gemm_wgm3_*, wgms: gemm_wgms_*, with a producer warp,
// in clusters of two blocks sharing B's tile; wgs: gemm_wgs_*, wgms
// without the cluster) as BenchmarkGemmPrecision times the others, e.g. tf32/n4096/wgm,
// in a benchmark of its own so that a first run on a GPU (bench/gpu_check.sh
// quick) can time it in a process of its own. GPU only (compute
// capability 9.0).
func BenchmarkGemmWGM(b *testing.B) {
	d := needGPU(b)
	for _, p := range []Precision{TF32, BF16} {
		for _, n := range []int{1024, 4096} {
			for _, k := range []TCKernel{TCWGM, TCWGM3, TCWGMS, TCWGS} {
				b.Run(fmt.Sprintf("%v/n%d/%v", p, n, k), func(b *testing.B) { benchGemm(b, d, p, n, k) })
			}
		}
	}
}

// benchGemm times n x n x n products in precision p with kernels k (see
// BenchmarkGemmPrecision).
func benchGemm(b *testing.B, d *Device, p Precision, n int, k TCKernel) {
	be := backendIn(b, d, p, k)
	if c := be.gemmLaunch(); k == TCV2 && !be.tc2Allowed(int(p-TF32), c) || k == TCV3 && !be.tc2Allowed(2, c) {
		b.Skipf("%s needs %d bytes of shared memory per block: more than %v gives", c.name, c.shared, d)
	}
	if _, _, wg := wgChoice(p, k); wg && !be.gemmLaunch().isWG() {
		b.Skipf("gemm_wg.cu runs on compute capability 9.0 only (%v)", d)
	}
	x, y, z := be.Alloc(n*n), be.Alloc(n*n), be.Alloc(n*n)
	defer func() {
		for _, t := range []tensor.Buffer{x, y, z} {
			be.Release(t)
		}
	}()
	randomFill(be, n*n, x, y)
	g := tensor.GemmArgs{M: n, N: n, K: n, Alpha: 1, A: x, B: y, C: z, LDA: n, LDB: n, LDC: n, Batch: 1}
	b.Logf("kernel %s", be.settleGemm(g))
	logGemmTunes(b, be)
	per := deviceLoop(b, d, func() { be.Gemm(g) })
	gflops := 2 * float64(n) * float64(n) * float64(n) / per.Seconds() / 1e9
	b.ReportMetric(gflops, "GFLOP/s")
	if peak, ok := d.PeakGFLOPS(p); ok {
		b.ReportMetric(100*gflops/peak, "%peak")
	}
	if be.gemmFor(g).isWG() {
		pack, mul := wgSplit(b, d, func() { be.Gemm(g) })
		b.ReportMetric(pack, "pack-us")
		b.ReportMetric(mul, "mul-us")
	}
}

// wgSplit profiles 10 of gemm_wg.cu's products (run) and returns the
// device time of one product's two packing launches and of its
// multiplication, in us: whether the packing or the wgmma kernel is the
// part to work on.
func wgSplit(b *testing.B, d *Device, run func()) (pack, mul float64) {
	b.Helper()
	const n = 10
	s, err := d.StartProfile()
	if err != nil {
		b.Fatal(err)
	}
	for range n {
		run()
	}
	prof, err := s.Stop()
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range prof.Kernels {
		switch {
		case strings.HasPrefix(r.Kernel, "gemm_wg_pack"): // gemm_wg_pack_* and gemm_wg_packt_*
			pack += r.TotalMS * 1e3 / n
		case strings.HasPrefix(r.Kernel, "gemm_wg"):
			mul += r.TotalMS * 1e3 / n
		}
	}
	return pack, mul
}

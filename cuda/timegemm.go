package cuda

import (
	"fmt"
	"time"

	"github.com/duel-ssl/duel/tensor"
)

// GemmTiming is the device time of one matrix product (TimeGemm).
type GemmTiming struct {
	Device    string    // e.g. "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)"
	Precision Precision // the precision the product ran in (FP32 where TF32 or BF16 fall back)
	Kernel    string    // sgemm_f32, gemm_tf32, gemm_bf16, gemm_tc2_tf32, gemm_tc2_bf16, gemm_tc3_tf32, or one of gemm_wg.cu's (gemm_wg_*, gemm_wgs_*, gemm_wgp_*, ...)
	// Candidates is, where the backend measured gemm_wg.cu's kernels on
	// this shape before choosing Kernel (TCAuto on compute capability
	// 9.0, gemm_tune.go), each candidate's median device time; nil
	// otherwise.
	Candidates map[string]time.Duration
	PerCall    time.Duration // device time per product, between events around the loop
	Reps       int           // products timed
	GFLOPS     float64       // 2*m*n*k / PerCall
	Peak       float64       // the device's dense peak in Precision, GFLOP/s (Device.PeakGFLOPS; 0: not known)
}

// TimeGemm times C = op(A)*op(B) (m x n x k, float32, row-major, alpha 1,
// beta 0, A and B small integers) on device 0 in precision p, for at least
// minTime and 3 products after one untimed product (and, where the
// backend measures its kernels on the shape, after the products that
// measure them), by events recorded on the device's stream before and
// after the loop: the device time a product takes when the queue is full. It is what `duelctl bench gemm
// --device cuda` reports; BenchmarkGemmPrecision times the same in go test.
func TimeGemm(m, n, k int, transA, transB bool, p Precision, minTime time.Duration) (GemmTiming, error) {
	if m <= 0 || n <= 0 || k <= 0 {
		return GemmTiming{}, fmt.Errorf("cuda: TimeGemm %dx%dx%d: expected positive sizes", m, n, k)
	}
	d, err := Default()
	if err != nil {
		return GemmTiming{}, err
	}
	be, err := newBackend(d, 256)
	if err != nil {
		return GemmTiming{}, err
	}
	res := GemmTiming{Device: d.String(), Precision: be.SetPrecision(p)}
	res.Peak, _ = d.PeakGFLOPS(res.Precision)
	g := tensor.GemmArgs{TransA: transA, TransB: transB, M: m, N: n, K: k, Alpha: 1, Batch: 1, LDA: k, LDB: n, LDC: n}
	if transA {
		g.LDA = m
	}
	if transB {
		g.LDB = k
	}
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) - 2
	}
	sync := func() {
		if err := be.Synchronize(); err != nil {
			panic(err) // a *tensor.DeviceError
		}
	}
	defer func() {
		be.EmptyCache()
		d.Free(be.dummy)
	}()
	err = tensor.CatchDeviceError(func() {
		g.A, g.B, g.C = be.Alloc(m*k), be.Alloc(k*n), be.Alloc(m*n)
		defer func() {
			for _, x := range []tensor.Buffer{g.A, g.B, g.C} {
				be.Release(x)
			}
		}()
		be.CopyIn(g.A, 0, a)
		be.CopyIn(g.B, 0, b)
		be.Gemm(g)
		res.Kernel = be.settleGemm(g)
		for _, t := range be.GemmTunes() {
			if t.Medians != nil {
				res.Candidates = t.Medians
			}
		}
		sync()
		start, err := d.Record()
		must("Record", err)
		defer start.Close()
		t0 := time.Now()
		for time.Since(t0) < minTime || res.Reps < 3 {
			be.Gemm(g)
			res.Reps++
			if res.Reps%64 == 0 {
				sync() // keep the wall clock near the device's
			}
		}
		end, err := d.Record()
		must("Record", err)
		defer end.Close()
		el, err := d.Elapsed(start, end)
		must("Elapsed", err)
		res.PerCall = el / time.Duration(res.Reps)
	})
	if err != nil {
		return GemmTiming{}, err
	}
	if res.PerCall > 0 {
		res.GFLOPS = 2 * float64(m) * float64(n) * float64(k) / res.PerCall.Seconds() / 1e9
	}
	return res, nil
}

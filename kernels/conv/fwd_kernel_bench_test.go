package conv

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkForwardKernel tells how close the direct forward pass comes to
// its micro-kernel: the 8x3 tile kernel alone (k 32 planes of 8192
// floats, 9 taps, 8 blocks of output channels over 40 tiles: operands
// from L1 and L2) on one goroutine and on GOMAXPROCS goroutines with
// buffers of their own, then Direct's forward pass of 64 -> 64 channels at
// 32x32, batch 32 (filter packing included), all in one run. It reports
// the three GFLOP/s and the ratios x_all_threads (all goroutines' kernel
// over one's) and of_kernel (the pass over the kernel on all goroutines:
// what the pass keeps of what the cores allow).
func BenchmarkForwardKernel(b *testing.B) {
	if !Fast() {
		b.Skip("no AVX-512 assembly kernels on this CPU")
	}
	benchForwardKernel(b, false)
}

// BenchmarkForwardKernelBF16 is BenchmarkForwardKernel for the bfloat16
// kernel (k 32 word planes of bfloat16 pairs) and DirectBF16 (pairing
// included).
func BenchmarkForwardKernelBF16(b *testing.B) {
	if !FastBF16() {
		b.Skip("no bfloat16 assembly kernels on this CPU (AVX512_BF16)")
	}
	benchForwardKernel(b, true)
}

// benchForwardKernel runs BenchmarkForwardKernel on the float32 kernel and
// Direct, or with bf16 on the bfloat16 ones.
func benchForwardKernel(b *testing.B, bf16 bool) {
	const k, blocks, tiles, ld = 32, 8, 40, 8 * 1024
	kern := forwardKernel(tile{8, 3}, bf16)
	tileFlops := 2.0 * 8 * 48 * 9 * k // 8 channels x 48 positions x 9 taps x k planes
	algo := Direct
	if bf16 {
		tileFlops *= 2 // two products a word
		algo = DirectBF16
	}
	// operands are one goroutine's buffers, filled before any timing.
	type operands struct {
		x, w, y []float32
		off     [9]int
		masks   []uint16
	}
	newOperands := func() *operands {
		o := &operands{x: make([]float32, k*ld+4096), w: make([]float32, 8*9*k*blocks), y: make([]float32, 8*blocks*ld), masks: make([]uint16, 9*9)}
		for t := range 9 {
			o.off[t] = (t/3)*32 + t%3
		}
		for i := range o.masks {
			o.masks[i] = 0xffff
		}
		return o
	}
	kernelRun := func(o *operands, reps int) {
		for range reps {
			for p := 0; p < 48*tiles; p += 48 {
				for blk := range blocks {
					kern(k, 9, &o.x[p], ld, &o.w[blk*8*9*k], &o.off, &o.masks[0], &o.y[blk*8*ld+p], ld, 0)
				}
			}
		}
	}
	const reps = 200
	ops := make([]*operands, runtime.GOMAXPROCS(0))
	for i := range ops {
		ops[i] = newOperands()
		kernelRun(ops[i], 1)
	}
	rate := func(goroutines int) float64 {
		best := 0.0
		for range 5 {
			var wg sync.WaitGroup
			t0 := time.Now()
			for g := range goroutines {
				wg.Add(1)
				go func() { defer wg.Done(); kernelRun(ops[g], reps) }()
			}
			wg.Wait()
			best = max(best, float64(goroutines*reps*tiles*blocks)*tileFlops/time.Since(t0).Seconds()/1e9)
		}
		return best
	}
	s := Shape{N: 32, In: 64, Out: 64, H: 32, W: 32, K: 3, S: 1, P: 1, ChannelMajor: true}
	r := rand.New(rand.NewPCG(1, 2))
	run := newPassRun(s, randSlice(r, s.Out*s.In*9), randSlice(r, s.N*s.In*s.H*s.W), randSlice(r, s.N*s.Out*s.OutH()*s.OutW()))
	var one, all, pass float64
	for b.Loop() {
		one, all = rate(1), rate(runtime.GOMAXPROCS(0))
		best := 1e300
		for range 5 {
			t0 := time.Now()
			run.run(algo, 0)
			best = min(best, time.Since(t0).Seconds())
		}
		pass = 2 * float64(s.Out*s.In*9*s.N*s.OutH()*s.OutW()) / best / 1e9
	}
	b.ReportMetric(one, "kernel-1-GFLOP/s")
	b.ReportMetric(all, fmt.Sprintf("kernel-%d-GFLOP/s", runtime.GOMAXPROCS(0)))
	b.ReportMetric(pass, "pass-GFLOP/s")
	b.ReportMetric(all/one, "x_all_threads")
	b.ReportMetric(pass/all, "of_kernel")
}

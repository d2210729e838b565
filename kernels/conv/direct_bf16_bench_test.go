package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/duel-ssl/duel/internal/scratch"
)

// resnetBF16Layers are the 3x3 layers of ResNet-18-w16 at batch 128 and of
// ResNet-18 (and ResNet-50's bottlenecks) at batch 32, the stride-2 ones
// only when strided.
func resnetBF16Layers(strided bool) []Shape {
	var shapes []Shape
	add := func(n int, layers [][4]int) {
		for _, l := range layers {
			if l[3] == 1 || strided {
				shapes = append(shapes, Shape{N: n, In: l[0], Out: l[1], H: l[2], W: l[2], K: 3, S: l[3], P: 1, ChannelMajor: true})
			}
		}
	}
	add(128, [][4]int{{16, 16, 32, 1}, {16, 32, 32, 2}, {32, 32, 16, 1}, {32, 64, 16, 2}, {64, 64, 8, 1}, {64, 128, 8, 2}, {128, 128, 4, 1}})
	add(32, [][4]int{{64, 64, 32, 1}, {64, 128, 32, 2}, {128, 128, 16, 1}, {128, 256, 16, 2}, {256, 256, 8, 1}, {512, 512, 4, 1}})
	return shapes
}

// benchPassRatios times pass p (0 forward, 1 weight gradient, 2 input
// gradient) of s in each of algos on the same operands (best of 5 each,
// alternating) and reports algos[0]'s GFLOP/s (the direct convolution's
// flops) and, under names[i-1], how much faster it ran than algos[i].
func benchPassRatios(b *testing.B, s Shape, p int, algos []Algo, names []string) {
	r := rand.New(rand.NewPCG(1, 2))
	run := newPassRun(s, randSlice(r, s.Out*s.In*9), randSlice(r, s.N*s.In*s.H*s.W), randSlice(r, s.N*s.Out*s.OutH()*s.OutW()))
	best := make([]float64, len(algos))
	for b.Loop() {
		for i := range best {
			best[i] = 1e300
		}
		for range 5 {
			for i, a := range algos {
				t0 := time.Now()
				run.run(a, p)
				best[i] = min(best[i], time.Since(t0).Seconds())
			}
		}
	}
	flop := 2 * float64(s.Out*s.In*9*s.N*s.OutH()*s.OutW())
	b.ReportMetric(flop/best[0]/1e9, "GFLOP/s")
	for i, name := range names {
		b.ReportMetric(best[i+1]/best[0], name)
	}
}

// bf16Passes names the passes of benchPassRatios in the benchmarks.
var bf16Passes = []string{"forward", "weightgrad", "inputgrad"}

// BenchmarkDirectBF16 times each pass of the 3x3 layers of ResNet-18-w16
// at batch 128 and of ResNet-18 at batch 32 in DirectBF16 beside
// Im2colBF16 and the float32 algorithm Auto picks, on the same operands
// (best of 5 each, alternating), and reports DirectBF16's GFLOP/s and its
// ratios to the two others (x_im2colbf16, x_fp32: above 1, DirectBF16 is
// faster). Passes DirectBF16 cannot run are skipped.
func BenchmarkDirectBF16(b *testing.B) {
	if !FastBF16() {
		b.Skip("no bfloat16 assembly kernels on this CPU (AVX512_BF16)")
	}
	for _, s := range resnetBF16Layers(true) {
		for p, pass := range bf16Passes {
			b.Run(fmt.Sprintf("%d-%d-%dx%d-s%d-n%d/%s", s.In, s.Out, s.H, s.W, s.S, s.N, pass), func(b *testing.B) {
				al := Choose(s, Auto)
				fp32Algo := []Algo{al.Forward, al.WeightGrad, al.InputGrad}[p]
				benchPassRatios(b, s, p, []Algo{DirectBF16, Im2colBF16, fp32Algo}, []string{"x_im2colbf16", "x_fp32"})
				b.Logf("fp32: %v", fp32Algo)
			})
		}
	}
}

// BenchmarkPackFilterBF16 times the bfloat16 filter packing of the direct
// kernels (pairing by gemm.PairRuns, then copies; pooled scratch as in the
// passes) beside the scalar packTaps, whose output it equals
// (TestPackTapsBF16): x_scalar is how much faster it runs.
func BenchmarkPackFilterBF16(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	sc := new(scratch.Free)
	taps := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []int{16, 64, 128, 256} {
		b.Run(fmt.Sprintf("%dx%d", c, c), func(b *testing.B) {
			w := randSlice(r, c*c*9)
			dst := make([]float32, FilterLenBF16(c, c))
			var fast, scalar float64
			for b.Loop() {
				fast, scalar = 1e300, 1e300
				for range 5 {
					t0 := time.Now()
					packFilterBF16(sc, dst, w, c, c, false)
					fast = min(fast, time.Since(t0).Seconds())
					t0 = time.Now()
					packTaps(tileFor(c), dst, w, c, c, false, taps, true)
					scalar = min(scalar, time.Since(t0).Seconds())
				}
			}
			b.ReportMetric(fast*1e6, "us")
			b.ReportMetric(scalar/fast, "x_scalar")
		})
	}
}

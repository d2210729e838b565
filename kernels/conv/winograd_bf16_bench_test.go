package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkWinogradBF16 times each pass of the 3x3 stride-1 layers of
// ResNet-18-w16 at batch 128 and of ResNet-18 (and ResNet-50's
// bottlenecks) at batch 32 in WinogradBF16 beside Im2colBF16 and, where
// the direct kernels run, DirectBF16, on the same operands (three rounds
// of blocks, one untimed call then three timed ones per algorithm: the
// best of 9 calls each; the untimed calls take the first ones, which
// allocate the scratch buffers, up to twice a later call), and reports WinogradBF16's nominal GFLOP/s (the
// direct convolution's flops) and its ratios to the others (x_im2colbf16,
// x_directbf16: above 1, WinogradBF16 is faster). The rule of
// AutoAlgosBF16 (winogradBF16Pays) comes from these ratios.
func BenchmarkWinogradBF16(b *testing.B) {
	if !FastBF16() {
		b.Skip("no bfloat16 assembly kernels on this CPU (AVX512_BF16)")
	}
	var shapes []Shape
	for _, l := range [][2]int{{16, 32}, {32, 16}, {64, 8}, {128, 4}} {
		shapes = append(shapes, Shape{N: 128, In: l[0], Out: l[0], H: l[1], W: l[1], K: 3, S: 1, P: 1, ChannelMajor: true})
	}
	for _, l := range [][2]int{{64, 32}, {128, 16}, {256, 8}, {512, 4}} {
		shapes = append(shapes, Shape{N: 32, In: l[0], Out: l[0], H: l[1], W: l[1], K: 3, S: 1, P: 1, ChannelMajor: true})
	}
	passes := []string{"forward", "weightgrad", "inputgrad"}
	for _, s := range shapes {
		for p, pass := range passes {
			b.Run(fmt.Sprintf("%d-%d-%dx%d-n%d/%s", s.In, s.Out, s.H, s.W, s.N, pass), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				run := newPassRun(s, randSlice(r, s.Out*s.In*9), randSlice(r, s.N*s.In*s.H*s.W), randSlice(r, s.N*s.Out*s.OutH()*s.OutW()))
				algos := []Algo{WinogradBF16, Im2colBF16}
				if Applies(s, DirectBF16, true) {
					algos = append(algos, DirectBF16)
				}
				best := make([]float64, len(algos))
				for b.Loop() {
					for i := range best {
						best[i] = 1e300
					}
					for range 3 {
						for i, a := range algos {
							run.run(a, p) // untimed: the first call allocates its scratch buffers
							for range 3 {
								t0 := time.Now()
								run.run(a, p)
								best[i] = min(best[i], time.Since(t0).Seconds())
							}
						}
					}
				}
				flop := 2 * float64(s.Out*s.In*9*s.N*s.OutH()*s.OutW())
				b.ReportMetric(flop/best[0]/1e9, "GFLOP/s")
				b.ReportMetric(best[1]/best[0], "x_im2colbf16")
				if len(best) > 2 {
					b.ReportMetric(best[2]/best[0], "x_directbf16")
				}
			})
		}
	}
}

package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkPassesBF16 times the three passes of ResNet-18's 3x3 layers at
// batch 32 (and the width-16 net's first, at batch 128) in bfloat16
// (Im2colBF16) beside the float32 algorithm Auto picks (direct, Winograd
// or im2col) on the same operands, and reports both in GFLOP/s and their
// ratio (x_fp32: how much faster bf16 runs).
func BenchmarkPassesBF16(b *testing.B) {
	shapes := []Shape{
		{N: 32, In: 64, H: 32, W: 32, Out: 64, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 32, In: 64, H: 32, W: 32, Out: 128, K: 3, S: 2, P: 1, ChannelMajor: true},
		{N: 32, In: 128, H: 16, W: 16, Out: 128, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 32, In: 256, H: 8, W: 8, Out: 256, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 32, In: 512, H: 4, W: 4, Out: 512, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 128, In: 16, H: 32, W: 32, Out: 16, K: 3, S: 1, P: 1, ChannelMajor: true},
	}
	for _, s := range shapes {
		b.Run(fmt.Sprintf("%d-%d-%dx%d-s%d-n%d", s.In, s.Out, s.H, s.W, s.S, s.N), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			run := newPassRun(s, randSlice(r, s.Out*s.In*s.K*s.K), randSlice(r, s.N*s.In*s.H*s.W), randSlice(r, s.N*s.Out*s.OutH()*s.OutW()))
			al := Choose(s, Auto)
			fp32 := []Algo{al.Forward, al.WeightGrad, al.InputGrad}
			best := func(f func()) float64 {
				f()
				t := 1e300
				for range 5 {
					t0 := time.Now()
					f()
					t = min(t, time.Since(t0).Seconds())
				}
				return t
			}
			var tf, tb float64
			for b.Loop() {
				tf, tb = 0, 0
				for p := range 3 {
					tf += best(func() { run.run(fp32[p], p) })
					tb += best(func() { run.run(Im2colBF16, p) })
				}
			}
			flop := 3 * 2 * float64(s.Out*s.In*s.K*s.K*s.N*s.OutH()*s.OutW())
			b.ReportMetric(flop/tb/1e9, "bf16-GFLOP/s")
			b.ReportMetric(flop/tf/1e9, "fp32-GFLOP/s")
			b.ReportMetric(tf/tb, "x_fp32")
			b.Logf("fp32 algorithms %v", al)
		})
	}
}

package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/duel-ssl/duel/internal/scratch"
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
			sc := new(scratch.Free)
			wd, xd, dy := randSlice(r, s.Out*s.In*s.K*s.K), randSlice(r, s.N*s.In*s.H*s.W), randSlice(r, s.N*s.Out*s.OutH()*s.OutW())
			yd, dx, dw := make([]float32, len(dy)), make([]float32, len(xd)), make([]float32, len(wd))
			al := Choose(s, Auto)
			var pl *Plan
			if Applies(s, Direct, true) {
				pl = CachedPlan(s.H, s.W, s.S)
			}
			wino := func() []float32 {
				u := make([]float32, WinogradKernelsLen(s.Out, s.In))
				WinogradKernels(u, wd, s.Out, s.In)
				return u
			}
			fp32 := []func(){
				func() {
					switch al.Forward {
					case Direct:
						DirectForward(sc, s, pl, wd, xd, yd)
					case Winograd:
						WinogradForward(sc, s, wino(), xd, yd)
					default:
						Im2colForward(sc, s, wd, xd, yd)
					}
				},
				func() {
					switch al.WeightGrad {
					case Direct:
						DirectWeightGrad(sc, s, pl, xd, dy, dw, false)
					case Winograd:
						WinogradWeightGrad(sc, s, xd, dy, dw, false)
					default:
						Im2colWeightGrad(sc, s, xd, dy, dw, false)
					}
				},
				func() {
					switch al.InputGrad {
					case Direct:
						DirectInputGrad(sc, s, pl, wd, dy, dx, false)
					case Winograd:
						WinogradInputGrad(sc, s, wino(), dy, dx, false)
					default:
						Im2colInputGrad(sc, s, wd, dy, dx, false)
					}
				},
			}
			bf16 := []func(){
				func() { Im2colForwardBF16(sc, s, wd, xd, yd) },
				func() { Im2colWeightGradBF16(sc, s, xd, dy, dw, false) },
				func() { Im2colInputGradBF16(sc, s, wd, dy, dx, false) },
			}
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
					tf += best(fp32[p])
					tb += best(bf16[p])
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

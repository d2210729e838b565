package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkWinoTransforms times the input, output, output-gradient and
// filter transforms alone on one goroutine and reports nanoseconds per
// tile and channel (per kernel for the filter transform and its adjoint; the adjoint
// splits itself over goroutines).
func BenchmarkWinoTransforms(b *testing.B) {
	for _, tc := range []struct{ n, c, hw int }{{2, 64, 32}, {4, 256, 8}, {16, 512, 4}} {
		g := geom{n: tc.n, cin: tc.c, h: tc.hw, w: tc.hw, cout: tc.c, k: 3, s: 1, p: 1, oh: tc.hw, ow: tc.hw, xcm: true}
		th, tw := g.winoTiles()
		nt := tc.n * th * tw
		r := rand.New(rand.NewPCG(1, 2))
		x := randSlice(r, tc.c*tc.n*tc.hw*tc.hw)
		v := make([]float32, 16*winoLd(tc.c, nt))
		name := fmt.Sprintf("n%d-c%d-%dx%d", tc.n, tc.c, tc.hw, tc.hw)
		b.Run("input-"+name, func(b *testing.B) {
			for b.Loop() {
				g.winoInput(v, x, 0, tc.n, false, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nt*tc.c), "ns/tile")
		})
		b.Run("output-"+name, func(b *testing.B) {
			for b.Loop() {
				g.winoOutput(x, v, 0, tc.n, true, false, false, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nt*tc.c), "ns/tile")
		})
		b.Run("gradoutput-"+name, func(b *testing.B) {
			for b.Loop() {
				g.winoGradOutput(v, x, 0, tc.n, false, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nt*tc.c), "ns/tile")
		})
		b.Run("filter-"+name, func(b *testing.B) {
			wd := randSlice(r, tc.c*tc.c*3*3)
			u := make([]float32, 16*winoLd(tc.c, tc.c))
			for b.Loop() {
				winoFilter(u, wd, tc.c, tc.c, false)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tc.c*tc.c), "ns/kernel")
		})
		b.Run("filtergrad-"+name, func(b *testing.B) {
			du := randSlice(r, 16*winoLd(tc.c, tc.c))
			dw := make([]float32, tc.c*tc.c*9)
			for b.Loop() {
				winoFilterGrad(dw, du, tc.c, tc.c, true)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tc.c*tc.c), "ns/kernel")
		})
	}
}

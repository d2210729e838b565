package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchShapes are (channels, images per chunk, map size) of the narrow 3x3
// convolutions of a CIFAR ResNet-18-w16 (chunks of about 8192 positions).
var benchShapes = [][3]int{{16, 8, 32}, {32, 32, 16}, {64, 128, 8}, {3, 8, 32}}

// benchBatch is the batch whose planes the chunks are taken from (the
// plane stride matters: a multiple of 4 KiB maps the channels of a chunk
// onto the same L1 sets).
const benchBatch = 128

// BenchmarkForwardTiles times Forward with each register tile on one
// thread and reports GFLOP/s (2*out*in*9 per position).
func BenchmarkForwardTiles(b *testing.B) {
	for _, s := range benchShapes {
		c, cnt, hw := s[0], s[1], s[2]
		for _, t := range []tile{{8, 3}, {4, 6}} {
			b.Run(fmt.Sprintf("c%d-n%d-%dx%d/%dx%d", c, cnt, hw, hw, t.mr, t.nv), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 1))
				n := cnt * hw * hw
				ld := benchBatch * hw * hw
				x, y := randSlice(r, c*ld), make([]float32, c*ld)
				f := packTaps(t, make([]float32, filterLen(t, c, c, 9)), randSlice(r, c*c*9), c, c, false, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, false)
				pl := NewPlan(hw, hw, 1)
				for b.Loop() {
					Forward(pl, &f, y, ld, x, ld, cnt, false)
				}
				b.ReportMetric(2*float64(c*c*9*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkWeightGrad times WeightGrad on one thread and reports GFLOP/s.
func BenchmarkWeightGrad(b *testing.B) {
	for _, s := range benchShapes {
		c, cnt, hw := s[0], s[1], s[2]
		out := max(c, 16)
		b.Run(fmt.Sprintf("out%d-in%d-n%d-%dx%d", out, c, cnt, hw, hw), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			n := cnt * hw * hw
			ld := benchBatch * hw * hw
			x, dy := randSlice(r, c*ld), randSlice(r, out*ld)
			dw := make([]float32, out*c*9)
			pl := NewPlan(hw, hw, 1)
			for b.Loop() {
				WeightGrad(pl, dw, dy, ld, x, ld, out, c, cnt, false)
			}
			b.ReportMetric(2*float64(out*c*9*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

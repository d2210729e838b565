package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkIm2col times im2col of one image for the strided and the "same"
// convolutions of a CIFAR ResNet-18-w16 and reports GB/s of patch matrix
// written.
func BenchmarkIm2col(b *testing.B) {
	for _, tc := range []struct {
		c, hw, k, s, p int
	}{{16, 32, 3, 2, 1}, {16, 32, 1, 2, 0}, {32, 16, 3, 2, 1}, {64, 8, 1, 2, 0}, {16, 32, 3, 1, 1}, {32, 16, 3, 1, 1}} {
		b.Run(fmt.Sprintf("c%d-%dx%d-k%ds%d", tc.c, tc.hw, tc.hw, tc.k, tc.s), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			src := randSlice(r, tc.c*tc.hw*tc.hw)
			o := OutSize(tc.hw, tc.k, tc.s, tc.p)
			col := make([]float32, tc.c*tc.k*tc.k*o*o)
			for b.Loop() {
				im2col(col, o*o, src, tc.hw*tc.hw, tc.c, tc.hw, tc.hw, tc.k, tc.k, tc.s, tc.p)
			}
			b.ReportMetric(float64(4*len(col)*b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkCol2im times col2im of one image for the strided convolutions
// of a CIFAR ResNet-18-w16 and reports GB/s of patch matrix read.
func BenchmarkCol2im(b *testing.B) {
	for _, tc := range []struct {
		c, hw, k, s, p int
	}{{16, 32, 3, 2, 1}, {32, 16, 3, 2, 1}, {64, 8, 3, 2, 1}, {16, 32, 1, 2, 0}} {
		b.Run(fmt.Sprintf("c%d-%dx%d-k%ds%d", tc.c, tc.hw, tc.hw, tc.k, tc.s), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			dst := make([]float32, tc.c*tc.hw*tc.hw)
			o := OutSize(tc.hw, tc.k, tc.s, tc.p)
			col := randSlice(r, tc.c*tc.k*tc.k*o*o)
			for b.Loop() {
				col2im(dst, tc.hw*tc.hw, col, o*o, tc.c, tc.hw, tc.hw, tc.k, tc.k, tc.s, tc.p)
			}
			b.ReportMetric(float64(4*len(col)*b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

package conv

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestWinoFilterFlip checks that the transformed kernels of the flipped,
// transposed weight are those of the weight, transposed and permuted by
// winoFlip, as winoConv reads them for the input gradient.
func TestWinoFilterFlip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	const out, in = 5, 3
	wd := randSlice(r, out*in*3*3)
	wt := make([]float32, len(wd))
	for co := range out {
		for ci := range in {
			for j := range 9 {
				wt[(ci*out+co)*9+j] = wd[(co*in+ci)*9+8-j]
			}
		}
	}
	u := make([]float32, 16*winoLd(out, in))
	ut := make([]float32, 16*winoLd(in, out))
	winoFilter(u, wd, out, in, false)
	winoFilter(ut, wt, in, out, false)
	ld := winoLd(out, in)
	for xi := range 16 {
		src := 4*winoFlip[xi/4] + winoFlip[xi%4]
		for ci := range in {
			for co := range out {
				got, want := u[src*ld+co*in+ci], ut[xi*ld+ci*out+co]
				if math.Abs(float64(got-want)) > 1e-6 {
					t.Fatalf("xi %d, (%d, %d): %v, want %v", xi, ci, co, got, want)
				}
			}
		}
	}
}

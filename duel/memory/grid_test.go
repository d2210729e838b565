package memory

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGridOf checks gridOf against floor(2048*x + 1/2) on the values where
// rounding can go wrong: exact halves of the grid, their float32
// neighbours, the ends of [-1, 1] and beyond by a rounding error, zeros and
// random components.
func TestGridOf(t *testing.T) {
	var xs []float32
	for k := -4097; k <= 4097; k++ {
		half := float32(k) / 4096 // (2k)/4096 = grid point, odd k = half-way
		xs = append(xs, half, math.Nextafter32(half, -2), math.Nextafter32(half, 2))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, math.Nextafter32(1, 2), math.Nextafter32(-1, -2))
	rng := rand.New(rand.NewPCG(1, 1))
	for range 100000 {
		xs = append(xs, float32(rng.Float64()*2-1))
	}
	for _, x := range xs {
		want := math.Floor(float64(x)*gridScale + 0.5)
		if got := gridOf(x); float64(got) != want {
			t.Fatalf("gridOf(%v) = %d, want %v", x, got, want)
		}
	}
}

package loss

import (
	"math"
	"math/rand/v2"
	"testing"
)

// barlowRef is Barlow Twins' loss in float64 from its definition.
func barlowRef(z1, z2 []float64, b, d int, lambda, eps float64) float64 {
	norm := func(x []float64) []float64 {
		h := make([]float64, b*d)
		for j := range d {
			var m, v float64
			for r := range b {
				m += x[r*d+j]
			}
			m /= float64(b)
			for r := range b {
				v += (x[r*d+j] - m) * (x[r*d+j] - m)
			}
			s := math.Sqrt(v/float64(b) + eps)
			for r := range b {
				h[r*d+j] = (x[r*d+j] - m) / s
			}
		}
		return h
	}
	h1, h2 := norm(z1), norm(z2)
	var l float64
	for i := range d {
		for j := range d {
			var c float64
			for r := range b {
				c += h1[r*d+i] * h2[r*d+j]
			}
			c /= float64(b)
			if i == j {
				l += (c - 1) * (c - 1)
			} else {
				l += lambda * c * c
			}
		}
	}
	return l
}

// TestBarlow checks Barlow's loss against its definition in float64 and
// BarlowGrad (both views) against central differences of it.
func TestBarlow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const eps, lambda = 1e-5, 0.1
	for _, sz := range [][2]int{{2, 1}, {3, 5}, {7, 4}} {
		b, d := sz[0], sz[1]
		z := [2][]float32{make([]float32, b*d), make([]float32, b*d)}
		z64 := [2][]float64{make([]float64, b*d), make([]float64, b*d)}
		for v := range z {
			for i := range z[v] {
				z[v][i] = float32(r.NormFloat64())
				z64[v][i] = float64(z[v][i])
			}
		}
		h1, h2, g := make([]float32, b*d), make([]float32, b*d), make([]float32, d*d)
		std1 := BarlowNorm(h1, z[0], b, d, eps)
		std2 := BarlowNorm(h2, z[1], b, d, eps)
		l := Barlow(g, h1, h2, b, d, lambda)
		if ref := barlowRef(z64[0], z64[1], b, d, lambda, eps); math.Abs(l-ref) > 1e-5*(1+math.Abs(ref)) {
			t.Errorf("%dx%d: loss %v, want %v", b, d, l, ref)
		}
		dz := [2][]float32{make([]float32, b*d), make([]float32, b*d)}
		BarlowGrad(dz[0], g, h1, h2, std1, b, d, 1, true)
		BarlowGrad(dz[1], g, h2, h1, std2, b, d, 1, false)
		const h = 1e-6
		for v := range z64 {
			for i := range z64[v] {
				old := z64[v][i]
				z64[v][i] = old + h
				up := barlowRef(z64[0], z64[1], b, d, lambda, eps)
				z64[v][i] = old - h
				dn := barlowRef(z64[0], z64[1], b, d, lambda, eps)
				z64[v][i] = old
				if want := (up - dn) / (2 * h); math.Abs(float64(dz[v][i])-want) > 1e-4*(1+math.Abs(want)) {
					t.Errorf("%dx%d: gradient of view %d, element %d = %v, want %v", b, d, v+1, i, dz[v][i], want)
				}
			}
		}
	}
}

package loss

import (
	"math"
	"math/rand/v2"
	"testing"
)

// byolRef is BYOL's loss in float64 from its definition,
// (1/b) Σᵢ ‖pᵢ/‖pᵢ‖ - zᵢ/‖zᵢ‖‖², norms bounded below by eps.
func byolRef(p, z []float64, b, d int, eps float64) float64 {
	var total float64
	for i := range b {
		var pp, zz float64
		for j := range d {
			pp += p[i*d+j] * p[i*d+j]
			zz += z[i*d+j] * z[i*d+j]
		}
		np, nz := math.Max(math.Sqrt(pp), eps), math.Max(math.Sqrt(zz), eps)
		for j := range d {
			e := p[i*d+j]/np - z[i*d+j]/nz
			total += e * e
		}
	}
	return total / float64(b)
}

// TestBYOL checks the loss against its definition and BYOLGrad against
// central differences of it, for odd sizes.
func TestBYOL(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, sz := range [][2]int{{1, 1}, {3, 5}, {7, 13}} {
		b, d := sz[0], sz[1]
		p, z := make([]float32, b*d), make([]float32, b*d)
		for i := range p {
			p[i], z[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		l, np, nz, cos := BYOL(p, z, b, d, 1e-12)
		p64, z64 := make([]float64, b*d), make([]float64, b*d)
		for i := range p {
			p64[i], z64[i] = float64(p[i]), float64(z[i])
		}
		if ref := byolRef(p64, z64, b, d, 1e-12); math.Abs(l-ref) > 1e-12*(1+math.Abs(ref)) {
			t.Errorf("%dx%d: loss %v, want %v", b, d, l, ref)
		}
		g := make([]float32, b*d)
		BYOLGrad(g, p, z, b, d, np, nz, cos, -2/float64(b))
		const h = 1e-6
		for i := range p64 {
			old := p64[i]
			p64[i] = old + h
			up := byolRef(p64, z64, b, d, 1e-12)
			p64[i] = old - h
			dn := byolRef(p64, z64, b, d, 1e-12)
			p64[i] = old
			if want := (up - dn) / (2 * h); math.Abs(float64(g[i])-want) > 1e-5*(1+math.Abs(want)) {
				t.Errorf("%dx%d: gradient %d = %v, want %v", b, d, i, g[i], want)
			}
		}
	}
}

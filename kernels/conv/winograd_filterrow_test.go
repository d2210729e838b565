package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gtgRef writes the 16 elements of G g G^T for the 3x3 kernel g to us[xi][j].
func gtgRef(us *[16][]float32, j int, g []float32) {
	g = g[:9]
	// G g: 4 x 3.
	a0, a1, a2 := g[0], g[1], g[2]
	d0, d1, d2 := g[6], g[7], g[8]
	b0 := 0.5 * (a0 + g[3] + d0)
	b1 := 0.5 * (a1 + g[4] + d1)
	b2 := 0.5 * (a2 + g[5] + d2)
	c0 := b0 - g[3]
	c1 := b1 - g[4]
	c2 := b2 - g[5]
	for r, t := range [4][3]float32{{a0, a1, a2}, {b0, b1, b2}, {c0, c1, c2}, {d0, d1, d2}} {
		x, y, z := t[0], t[1], t[2]
		h := 0.5 * (x + y + z)
		us[4*r][j] = x
		us[4*r+1][j] = h
		us[4*r+2][j] = h - y
		us[4*r+3][j] = z
	}
}

// gtdgRef returns G^T u G (3x3, row-major) of the 4x4 tile u.
func gtdgRef(u *[16]float32) [9]float32 {
	// u G: 4 x 3, row by row.
	var h [12]float32
	for r := range 4 {
		a, b, c, d := u[4*r], u[4*r+1], u[4*r+2], u[4*r+3]
		s := 0.5 * (b + c)
		h[3*r], h[3*r+1], h[3*r+2] = a+s, 0.5*(b-c), s+d
	}
	// G^T (u G), column by column.
	var g [9]float32
	for b := range 3 {
		s := 0.5 * (h[3+b] + h[6+b])
		g[b], g[3+b], g[6+b] = h[b]+s, 0.5*(h[3+b]-h[6+b]), s+h[9+b]
	}
	return g
}

// TestGtgRow checks the row kernel transform bit for bit against gtgRef
// on odd and zero channel counts.
func TestGtgRow(t *testing.T) {
	for _, in := range []int{0, 1, 3, 8, 17} {
		t.Run(fmt.Sprint(in), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(in), 7))
			kernels := randSlice(r, 9*in+1)[:9*in]
			var got, want [16][]float32
			for xi := range got {
				got[xi], want[xi] = make([]float32, in), make([]float32, in)
			}
			gtgRow(&got, kernels, in)
			for ci := range in {
				gtgRef(&want, ci, kernels[9*ci:][:9])
			}
			for xi := range got {
				for ci := range in {
					if math.Float32bits(got[xi][ci]) != math.Float32bits(want[xi][ci]) {
						t.Fatalf("xi %d, ci %d: %v, want %v", xi, ci, got[xi][ci], want[xi][ci])
					}
				}
			}
		})
	}
}

// TestGtdgRow checks the row adjoint transform, written and accumulated,
// bit for bit against gtdgRef on odd and zero channel counts.
func TestGtdgRow(t *testing.T) {
	for _, tc := range []struct {
		in  int
		acc bool
	}{{0, false}, {1, false}, {5, false}, {17, false}, {0, true}, {1, true}, {9, true}} {
		t.Run(fmt.Sprint(tc.in, tc.acc), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.in), 11))
			var rows [16][]float32
			for xi := range rows {
				rows[xi] = randSlice(r, tc.in+1)[:tc.in]
			}
			got := randSlice(r, 9*tc.in+1)[:9*tc.in]
			want := append([]float32(nil), got...)
			gtdgRow(got, &rows, tc.in, tc.acc)
			for ci := range tc.in {
				var u [16]float32
				for xi := range u {
					u[xi] = rows[xi][ci]
				}
				v := gtdgRef(&u)
				for i, x := range v {
					if tc.acc {
						want[9*ci+i] += x
					} else {
						want[9*ci+i] = x
					}
				}
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

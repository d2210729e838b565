package igemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// refMul is the plain-Go reference: c[i*ldc+j] = sum_q a[i*lda+q]*b[j*ldb+q].
func refMul(c []int32, ldc int, a []int16, lda int, b []int16, ldb, m, n, k int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s int32
			for q := 0; q < k; q++ {
				s += int32(a[i*lda+q]) * int32(b[j*ldb+q])
			}
			c[i*ldc+j] = s
		}
	}
}

// TestMul compares Mul, with every available kernel, with the
// reference on random, odd and zero sizes, with padded strides, small
// values (the DUEL grid) and the full int16 range (wrapping int32 sums are
// equal whatever the order).
func TestMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][3]int{
		{0, 0, 0}, {0, 5, 3}, {4, 0, 3}, {3, 4, 0}, {1, 1, 1}, {8, 48, 2},
		{8, 48, 1}, {7, 47, 5}, {9, 49, 3}, {16, 96, 256}, {17, 100, 255},
		{33, 130, 128}, {64, 300, 64}, {256, 2304, 16}, {5, 3, 1000},
	}
	for range 12 {
		shapes = append(shapes, [3]int{rng.IntN(40), rng.IntN(200), rng.IntN(300)})
	}
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, span := range []int{2049, 65536} {
			name := fmt.Sprintf("%dx%dx%d/span%d", m, n, k, span)
			t.Run(name, func(t *testing.T) {
				lda, ldb, ldc := k+rng.IntN(3), k+rng.IntN(3), n+rng.IntN(3)
				a := randInt16(rng, max(0, m*lda), span)
				b := randInt16(rng, max(0, n*ldb), span)
				want := make([]int32, m*ldc)
				refMul(want, ldc, a, lda, b, ldb, m, n, k)
				var p Packed
				p.Pack(b, ldb, n, k)
				for _, kn := range available {
					got := make([]int32, m*ldc)
					for i := range got {
						got[i] = -7 // elements outside C stay as they are
					}
					mul(got, ldc, a, lda, m, []*Packed{&p}, kn)
					for i := 0; i < m; i++ {
						for j := 0; j < ldc; j++ {
							w := want[i*ldc+j]
							if j >= n {
								w = -7
							}
							if g := got[i*ldc+j]; g != w {
								t.Fatalf("%v: c[%d][%d] = %d, want %d", kn, i, j, g, w)
							}
						}
					}
				}
			})
		}
	}
}

// TestSetRow checks that replacing rows of a packed B changes exactly
// their columns of the product.
func TestSetRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m, n, k := 19, 101, 37
	a := randInt16(rng, m*k, 2049)
	b := randInt16(rng, n*k, 2049)
	var p Packed
	p.Pack(b, k, n, k)
	for _, j := range []int{0, 47, 48, 100, 5} {
		row := randInt16(rng, k, 2049)
		copy(b[j*k:], row)
		p.SetRow(j, row)
	}
	want := make([]int32, m*n)
	refMul(want, n, a, k, b, k, m, n, k)
	got := make([]int32, m*n)
	Mul(got, n, a, k, m, &p)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("c[%d] = %d, want %d", i, got[i], want[i])
		}
	}
}

// randInt16 returns n values uniform in (-span, span), clamped to int16.
func randInt16(rng *rand.Rand, n, span int) []int16 {
	v := make([]int16, n)
	for i := range v {
		x := rng.IntN(2*span-1) - (span - 1)
		v[i] = int16(max(-32768, min(32767, x)))
	}
	return v
}

// TestMulConcat checks that the product with two packed matrices side by
// side equals the product with their rows packed together, on odd sizes.
func TestMulConcat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range [][4]int{{9, 50, 13, 37}, {16, 2048 % 97, 48, 64}, {3, 0, 5, 7}, {17, 49, 0, 31}, {40, 300, 100, 256}} {
		m, n1, n2, k := s[0], s[1], s[2], s[3]
		a := randInt16(rng, m*k, 2049)
		b := randInt16(rng, (n1+n2)*k, 2049)
		want := make([]int32, m*(n1+n2))
		refMul(want, n1+n2, a, k, b, k, m, n1+n2, k)
		var p1, p2 Packed
		p1.Pack(b, k, n1, k)
		p2.Pack(b[n1*k:], k, n2, k)
		for _, mul := range []func([]int32, int, []int16, int, int, ...*Packed){MulConcat, MulConcatSerial} {
			got := make([]int32, m*(n1+n2))
			mul(got, n1+n2, a, k, m, &p1, &p2)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%v: c[%d] = %d, want %d", s, i, got[i], want[i])
				}
			}
		}
	}
}

// TestMulPanels checks that MulPanels, with every available kernel,
// computes exactly the columns of its panels (those of Mul) and leaves the
// others as they are, on odd, partial and empty ranges.
func TestMulPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range [][5]int{
		{16, 2048 % 97, 64, 0, 1}, {16, 97, 64, 1, 3}, {8, 48, 256, 0, 1}, {9, 100, 37, 1, 3}, {17, 49, 0, 0, 2},
		{0, 30, 8, 0, 1}, {23, 150, 255, 2, 2}, {33, 200, 128, 3, 5}, {5, 7, 1, 0, 1},
	} {
		m, n, k, p0, p1 := s[0], s[1], s[2], s[3], s[4]
		t.Run(fmt.Sprintf("%dx%dx%d/panels%d-%d", m, n, k, p0, p1), func(t *testing.T) {
			lda, ldc := k+rng.IntN(3), n+rng.IntN(3)
			a := randInt16(rng, m*lda, 2049)
			b := randInt16(rng, n*k, 2049)
			want := make([]int32, m*ldc)
			refMul(want, ldc, a, lda, b, k, m, n, k)
			var p Packed
			p.Pack(b, k, n, k)
			if p.Panels() != (n+NR-1)/NR {
				t.Fatalf("Panels() = %d for %d rows", p.Panels(), n)
			}
			j0, j1 := NR*p0, min(NR*p1, n)
			for _, kn := range available {
				got := make([]int32, m*ldc)
				for i := range got {
					got[i] = -7
				}
				mulPanelsChecked(got, ldc, a, lda, m, &p, p0, p1, kn)
				for i := 0; i < m; i++ {
					for j := 0; j < ldc; j++ {
						w := want[i*ldc+j]
						if j < j0 || j >= j1 {
							w = -7
						}
						if g := got[i*ldc+j]; g != w {
							t.Fatalf("%v: c[%d][%d] = %d, want %d", kn, i, j, g, w)
						}
					}
				}
			}
		})
	}
	var p Packed
	p.Reset(50, 4)
	for _, r := range [][2]int{{-1, 1}, {1, 0}, {0, 3}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("MulPanels(%d, %d) of 2 panels did not panic", r[0], r[1])
				}
			}()
			MulPanels(make([]int32, 100), 50, make([]int16, 8), 4, 2, &p, r[0], r[1])
		}()
	}
}

// TestPanel checks that Panel returns each panel's storage in the layout
// Packed documents, and panics outside the panels.
func TestPanel(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, sz := range [][2]int{{1, 1}, {47, 3}, {48, 4}, {49, 7}, {100, 256}} {
		n, k := sz[0], sz[1]
		b := randInt16(rng, n*k, 2049)
		var p Packed
		p.Pack(b, k, n, k)
		kp := (k + 1) / 2
		for P := 0; P < p.Panels(); P++ {
			d := p.Panel(P)
			if len(d) != kp*2*NR {
				t.Fatalf("%dx%d: panel %d has %d values, want %d", n, k, P, len(d), kp*2*NR)
			}
			for l := 0; l < NR; l++ {
				for q := 0; q < 2*kp; q++ {
					var want int16
					if j := P*NR + l; j < n && q < k {
						want = b[j*k+q]
					}
					if got := d[(q/2)*2*NR+2*l+q%2]; got != want {
						t.Fatalf("%dx%d: panel %d row %d value %d = %d, want %d", n, k, P, l, q, got, want)
					}
				}
			}
		}
		for _, P := range []int{-1, p.Panels()} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatalf("Panel(%d) of %d panels did not panic", P, p.Panels())
					}
				}()
				p.Panel(P)
			}()
		}
	}
}

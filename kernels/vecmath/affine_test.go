package vecmath

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/floattest"
)

// finite returns a copy of v with infinities replaced by 1.
func finite(v []float32) []float32 {
	out := append([]float32(nil), v...)
	for i, x := range out {
		if math.IsInf(float64(x), 0) {
			out[i] = 1
		}
	}
	return out
}

// TestAffineKernels checks that the dispatched loops (assembly where
// available) compute bit for bit what the Go references compute, on odd
// lengths, empty slices, zeros, negative zeros and infinities.
func TestAffineKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	t.Logf("elementwise kernels: %s", ISA())
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100, 1027} {
		x, y := floattest.Specials(r, n), floattest.Specials(r, n)
		mu, a, b := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		got, want := make([]float32, n), make([]float32, n)
		check := func(name string) {
			if i := floattest.FirstDiff(got, want); i >= 0 {
				t.Errorf("%s n=%d: element %d = %g (%#x), reference %g (%#x)", name, n, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
		Affine(got, x, mu, a, b)
		affineGo(want, x, mu, a, b)
		check("Affine")
		AffineReLU(got, x, mu, a, b)
		affineReLUGo(want, x, mu, a, b)
		check("AffineReLU")
		AffineAddReLU(got, x, y, mu, a, b)
		affineAddReLUGo(want, x, y, mu, a, b)
		check("AffineAddReLU")
		MaskPositive(got, x, y)
		maskPositiveGo(want, x, y)
		check("MaskPositive")
		// Finite values only for the sum (inf-inf is NaN either way).
		fx := finite(x)
		if g, w := Sum(fx), sum8Go(fx); math.Float32bits(g) != math.Float32bits(w) {
			t.Errorf("Sum n=%d: %v, reference %v", n, g, w)
		}
	}
}

// TestReLUGrad checks ReLUGrad, storing and adding, against the definition
// on ReLU outputs (zeros, negative zeros and positive values).
func TestReLUGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{0, 1, 7, 8, 9, 33} {
		dy, y := floattest.Specials(r, n), floattest.Specials(r, n)
		for i, v := range y {
			y[i] = relu32(v)
		}
		old := finite(floattest.Specials(r, n))
		for _, acc := range []bool{false, true} {
			got := append([]float32(nil), old...)
			want := append([]float32(nil), old...)
			ReLUGrad(got, dy, y, acc)
			for i := range want {
				var g float32
				if y[i] > 0 {
					g = dy[i]
				}
				if acc {
					want[i] += g
				} else {
					want[i] = g
				}
			}
			if i := floattest.FirstDiff(got, want); i >= 0 {
				t.Errorf("n=%d acc=%v: element %d = %g, want %g", n, acc, i, got[i], want[i])
			}
		}
	}
}

func BenchmarkAffine(b *testing.B) {
	x, d := make([]float32, 1<<14), make([]float32, 1<<14)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	b.Run("AffineReLU", func(b *testing.B) {
		for b.Loop() {
			AffineReLU(d, x, 0.5, 1.5, 0.1)
		}
		b.SetBytes(8 << 14)
	})
	b.Run("AffineReLU-go", func(b *testing.B) {
		for b.Loop() {
			affineReLUGo(d, x, 0.5, 1.5, 0.1)
		}
		b.SetBytes(8 << 14)
	})
}

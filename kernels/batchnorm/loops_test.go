package batchnorm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/floattest"
	"github.com/duel-ssl/duel/kernels/vecmath"
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

// TestLoops checks that the dispatched loops (assembly where available)
// compute bit for bit what the Go references compute, on odd lengths,
// empty slices, zeros, negative zeros and infinities.
func TestLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	same := func(a, b []float32) int {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				return i
			}
		}
		return -1
	}
	t.Logf("assembly loops: %v", useAVX2)
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100, 1027} {
		x, y := floattest.Specials(r, n), floattest.Specials(r, n)
		mu, a, b := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		got, want := make([]float32, n), make([]float32, n)
		check := func(name string) {
			if i := same(got, want); i >= 0 {
				t.Errorf("%s n=%d: element %d = %g (%#x), reference %g (%#x)", name, n, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
		d, e := float32(r.NormFloat64()), float32(r.NormFloat64())
		bnDxTrain(got, x, y, a, b, mu, d, e)
		bnDxGo(want, x, y, a, b, mu, d, e)
		check("bnDx")
		// In place (dx aliases dy).
		copy(got, y)
		copy(want, y)
		bnDxTrain(got, x, got, a, b, mu, d, e)
		bnDxGo(want, x, want, a, b, mu, d, e)
		check("bnDx in place")
		// Masked by a ReLU output (specials: negative zeros, NaN and
		// infinities mask too), equal to masking first, then bnDx.
		m := floattest.Specials(r, n)
		bnDxTrainMasked(got, x, y, m, a, b, mu, d, e)
		masked := make([]float32, n)
		for i := range masked {
			if m[i] > 0 {
				masked[i] = y[i]
			}
		}
		bnDxGo(want, x, masked, a, b, mu, d, e)
		check("bnDxMasked")
		copy(got, y)
		bnDxTrainMasked(got, x, got, m, a, b, mu, d, e)
		check("bnDxMasked in place")
		bnDxMaskedGo(got, x, y, m, a, b, mu, d, e)
		check("bnDxMaskedGo")
		sums := func(name string, g, w [2]float32) {
			if math.Float32bits(g[0]) != math.Float32bits(w[0]) || math.Float32bits(g[1]) != math.Float32bits(w[1]) {
				if !(g[0] != g[0] && w[0] != w[0]) && !(g[1] != g[1] && w[1] != w[1]) {
					t.Errorf("%s n=%d: %v, reference %v", name, n, g, w)
				}
			}
		}
		// Finite values only for the reductions (inf-inf is NaN either way).
		fx, fy, fm := finite(x), finite(y), finite(floattest.Specials(r, n))
		sums("sqDev8", [2]float32{sqDev8(fx, mu)}, [2]float32{sqDev8Go(fx, mu)})
		g0, g1 := bnSums(fy, fx, mu)
		w0, w1 := bnSumsGo(fy, fx, mu)
		sums("bnSums", [2]float32{g0, g1}, [2]float32{w0, w1})
		g0, g1 = bnSumsMasked(fy, fx, fm, mu)
		w0, w1 = bnSumsMaskedGo(fy, fx, fm, mu)
		sums("bnSumsMasked", [2]float32{g0, g1}, [2]float32{w0, w1})
	}
}

func BenchmarkLoops(b *testing.B) {
	x, y, d := make([]float32, 1<<14), make([]float32, 1<<14), make([]float32, 1<<14)
	for i := range x {
		x[i], y[i] = float32(i%7)-3, float32(i%5)-2
	}
	b.Run("bnDx", func(b *testing.B) {
		for b.Loop() {
			bnDxTrain(d, x, y, 0.5, 1.5, 0.1, 0.2, 0.3)
		}
		b.SetBytes(12 << 14)
	})
	b.Run("bnDxMasked", func(b *testing.B) {
		for b.Loop() {
			bnDxTrainMasked(d, x, y, x, 0.5, 1.5, 0.1, 0.2, 0.3)
		}
		b.SetBytes(16 << 14)
	})
	b.Run("mask-then-bnDx", func(b *testing.B) {
		for b.Loop() {
			vecmath.MaskPositive(d, y, x)
			bnDxTrain(d, x, d, 0.5, 1.5, 0.1, 0.2, 0.3)
		}
		b.SetBytes(16 << 14)
	})
	b.Run("bnDx-go", func(b *testing.B) {
		for b.Loop() {
			bnDxGo(d, x, y, 0.5, 1.5, 0.1, 0.2, 0.3)
		}
		b.SetBytes(12 << 14)
	})
}

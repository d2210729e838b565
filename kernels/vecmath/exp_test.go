package vecmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestExpf(t *testing.T) {
	var worst float64
	var at float32
	check := func(x float32) {
		want := math.Exp(float64(x))
		got := float64(Expf(x))
		if math.IsInf(want, 1) || want == 0 {
			if got != want {
				t.Fatalf("Expf(%g) = %g, want %g", x, got, want)
			}
			return
		}
		ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
		if e := math.Abs(got-want) / ulp; e > worst {
			worst, at = e, x
		}
	}
	for x := float32(-87); x <= 88; x += 0.001 {
		check(x)
	}
	for _, x := range []float32{0, -0, 1e-30, -1e-30, 88.7, 89, -87.5, -100, -104, -200, 1000, float32(math.Inf(-1))} {
		check(x)
	}
	// expShift computes the same values.
	src := []float32{-90, -3, 0, 0.5, 20, 100}
	dst := make([]float32, len(src))
	sum := ExpShift(dst, src, 1)
	var want float64
	for i, v := range src {
		if e := Expf(v - 1); dst[i] != e {
			t.Fatalf("ExpShift(%g) = %g, expf gives %g", v, dst[i], e)
		}
		want += float64(dst[i])
	}
	if sum != want {
		t.Fatalf("expShift sum %g, want %g", sum, want)
	}
	if worst > 2 {
		t.Fatalf("expf error %.2f ulp at %g, want <= 2", worst, at)
	}
	if v := Expf(float32(math.NaN())); !math.IsNaN(float64(v)) {
		t.Fatalf("Expf(NaN) = %g", v)
	}
	if v := Expf(float32(math.Inf(1))); !math.IsInf(float64(v), 1) {
		t.Fatalf("Expf(+Inf) = %g", v)
	}
}

// TestExpShiftKernel checks the SIMD kernel against the plain-Go
// reference, bit for bit, on random lengths (zero, odd, multiples of 8)
// with values inside and outside the polynomial's range.
func TestExpShiftKernel(t *testing.T) {
	if !useAVX2 {
		t.Skip("no SIMD kernel on this CPU or build")
	}
	r := rand.New(rand.NewPCG(1, 2))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -100, 95, -87, 88}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 100, 1000, 1031} {
		for trial := range 4 {
			src := make([]float32, n)
			for i := range src {
				src[i] = 20 * (r.Float32() - 0.5)
				if trial == 3 && r.IntN(50) == 0 {
					src[i] = special[r.IntN(len(special))]
				}
			}
			shift := float32(trial) - 1
			got, want := make([]float32, n), make([]float32, n)
			sg := ExpShift(got, src, shift)
			sw := expShiftGo(want, src, shift)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d trial %d: exp(%g - %g) = %g, reference %g", n, trial, src[i], shift, got[i], want[i])
				}
			}
			if !(math.Abs(sg-sw) <= 1e-12*math.Abs(sw)) && !(math.IsNaN(sg) && math.IsNaN(sw)) && sg != sw {
				t.Fatalf("n=%d trial %d: sum %g, reference %g", n, trial, sg, sw)
			}
		}
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float32, 4096)
	for i := range xs {
		xs[i] = float32(i)/256 - 8
	}
	b.Run("Expf", func(b *testing.B) {
		var s float32
		for b.Loop() {
			for _, x := range xs {
				s += Expf(x)
			}
		}
		_ = s
	})
	b.Run("ExpShift", func(b *testing.B) {
		dst := make([]float32, len(xs))
		for b.Loop() {
			ExpShift(dst, xs, 0)
		}
	})
	b.Run("expShiftGo", func(b *testing.B) {
		dst := make([]float32, len(xs))
		for b.Loop() {
			expShiftGo(dst, xs, 0)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		var s float32
		for b.Loop() {
			for _, x := range xs {
				s += float32(math.Exp(float64(x)))
			}
		}
		_ = s
	})
}

// TestExpInPlace checks Exp and ExpShift with dst and src the same slice,
// on lengths that use the kernel and its Go tail.
func TestExpInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 8, 13, 64, 67} {
		src := make([]float32, n)
		for i := range src {
			src[i] = 30 * (r.Float32() - 0.5)
		}
		want := make([]float32, n)
		expShiftGo(want, src, 0)
		got := append([]float32(nil), src...)
		Exp(got, got)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: in-place exp(%g) = %g, reference %g", n, src[i], got[i], want[i])
			}
		}
	}
}

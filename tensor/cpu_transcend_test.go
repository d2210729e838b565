package tensor

import (
	"math"
	"testing"
)

// TestTranscendAccuracy sweeps Exp, Sigmoid and Tanh of the CPU backend
// against float64 math: within 3e-7 relative (about 2.5 ulp), exact on
// special values, and the slice forms (in place too) bit for bit equal to
// the scalar ones.
func TestTranscendAccuracy(t *testing.T) {
	tests := []struct {
		name  string
		one   func(float32) float32
		vec   func(d, s []float32)
		exact func(float64) float64
	}{
		{"exp", func(x float32) float32 { return unary1(OpExp, x, 0) }, func(d, s []float32) { unaryVecGo(OpExp, d, s, 0) }, math.Exp},
		{"sigmoid", sigmoid1, sigmoidVec, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"tanh", tanh1, tanhVec, math.Tanh},
	}
	var xs []float32
	for x := float32(-30); x <= 30; x += 0.00097 {
		xs = append(xs, x)
	}
	for x := float32(-0.7); x <= 0.7; x += 1.3e-5 {
		xs = append(xs, x)
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-40, 88.5, -88.5, -100, 100,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	xs = append(xs, special...)
	for _, tc := range tests {
		got := make([]float32, len(xs))
		tc.vec(got, xs)
		inPlace := append([]float32(nil), xs...)
		tc.vec(inPlace, inPlace)
		var worst float64
		var at float32
		for i, x := range xs {
			g := tc.one(x)
			if math.Float32bits(g) != math.Float32bits(got[i]) || math.Float32bits(g) != math.Float32bits(inPlace[i]) {
				t.Fatalf("%s(%g): scalar %g, slice %g, in place %g", tc.name, x, g, got[i], inPlace[i])
			}
			w := tc.exact(float64(x))
			switch {
			case math.IsNaN(w):
				if !math.IsNaN(float64(g)) {
					t.Errorf("%s(%g) = %g, want NaN", tc.name, x, g)
				}
			case w == 0 || math.IsInf(float64(float32(w)), 0) || math.Abs(w) < 1e-37: // zero, overflow, subnormal
				if float32(w) != g || math.Signbit(w) != math.Signbit(float64(g)) {
					t.Errorf("%s(%g) = %g, want %g", tc.name, x, g, float32(w))
				}
			default:
				if e := math.Abs(float64(g)-w) / math.Abs(w); e > worst {
					worst, at = e, x
				}
			}
		}
		if worst > 3e-7 {
			t.Errorf("%s: relative error %.3g at %g, want <= 3e-7", tc.name, worst, at)
		}
	}
}

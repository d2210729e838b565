package optim

import (
	"math"
	"slices"
	"testing"
)

// vals returns n deterministic values in about [-2, 2], none zero.
func vals(n int, seed float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(2*math.Sin(seed+1.7*float64(i))) + 0.01
	}
	return v
}

// TestSteps checks properties of the steps that hold exactly or to float32
// precision, over odd and empty sizes: Adam's first step moves each element
// by lr*sign(g) (to eps), LARS on an excluded parameter is SGD without
// decay bit for bit, SGD without momentum needs no buffer, the first
// momentum step stores the update, EMA with m = 0 copies the online values.
func TestSteps(t *testing.T) {
	for _, n := range []int{0, 1, 7, 33, 1000} {
		g := vals(n, 1)
		tests := []struct {
			name string
			run  func() (got, want []float32, tol float64)
		}{
			{"AdamFirstStep", func() ([]float32, []float32, float64) {
				w, m, v := vals(n, 2), make([]float32, n), make([]float32, n)
				want := make([]float32, n)
				for i, x := range w {
					want[i] = x - 0.01*float32(math.Copysign(1, float64(g[i])))
				}
				AdamStep(w, g, m, v, Adam{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1})
				return w, want, 1e-6
			}},
			{"LARSExcludedIsSGD", func() ([]float32, []float32, float64) {
				w1, w2 := vals(n, 3), vals(n, 3)
				b1, b2 := make([]float32, n), make([]float32, n)
				LARSStep(w1, g, b1, LARS{SGD: SGD{LR: 0.1, WeightDecay: 0.5, Momentum: 0.9, First: true}, Eta: 1e-3, Eps: 1e-8, Excluded: true})
				SGDStep(w2, g, b2, SGD{LR: 0.1, Momentum: 0.9, First: true})
				return append(w1, b1...), append(w2, b2...), 0
			}},
			{"SGDNoMomentumNoBuffer", func() ([]float32, []float32, float64) {
				w := vals(n, 4)
				want := make([]float32, n)
				for i, x := range w {
					want[i] = float32(float64(x) - 0.1*(float64(g[i])+0.01*float64(x)))
				}
				SGDStep(w, g, nil, SGD{LR: 0.1, WeightDecay: 0.01})
				return w, want, 0
			}},
			{"FirstMomentumStepStoresUpdate", func() ([]float32, []float32, float64) {
				w, buf := vals(n, 5), vals(n, 6) // stale values: First ignores them
				SGDStep(w, g, buf, SGD{LR: 0.1, Momentum: 0.9, Dampening: 0.5, First: true})
				return buf, g, 0
			}},
			{"EMAZeroCopies", func() ([]float32, []float32, float64) {
				tg, on := vals(n, 7), vals(n, 8)
				EMA(tg, on, 0)
				return tg, on, 0
			}},
		}
		for _, tc := range tests {
			got, want, tol := tc.run()
			if len(got) != len(want) {
				t.Fatalf("%s n=%d: %d values, want %d", tc.name, n, len(got), len(want))
			}
			if tol == 0 && !slices.Equal(got, want) {
				t.Errorf("%s n=%d: %v, want %v", tc.name, n, got, want)
				continue
			}
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > tol {
					t.Errorf("%s n=%d: [%d] = %v, want %v", tc.name, n, i, got[i], want[i])
					break
				}
			}
		}
	}
}

// TestNorm checks Norm against a float64 sum and on an empty slice.
func TestNorm(t *testing.T) {
	if Norm(nil) != 0 {
		t.Errorf("Norm(nil) = %v", Norm(nil))
	}
	x := vals(101, 9)
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	if got := Norm(x); got != math.Sqrt(s) {
		t.Errorf("Norm = %v, want %v", got, math.Sqrt(s))
	}
}

package linear

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/kernels/gemm"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// near fails unless got is within 1e-5 of want relative to want's scale.
func near(t *testing.T, name string, got []float32, want []float64) {
	t.Helper()
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*(1+scale) {
			t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], want[i])
		}
	}
}

// TestPasses checks Forward (with and without bias), InputGrad and
// WeightGrad (stored and accumulated) and BiasGrad against float64 sums.
func TestPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, tc := range []struct{ rows, in, out int }{{1, 1, 1}, {3, 5, 2}, {17, 33, 9}, {64, 128, 10}} {
		x, w, b := randSlice(r, tc.rows*tc.in), randSlice(r, tc.out*tc.in), randSlice(r, tc.out)
		dy := randSlice(r, tc.rows*tc.out)
		for _, bias := range [][]float32{nil, b} {
			y := randSlice(r, tc.rows*tc.out)
			Forward(gemm.Sgemm, x, w, bias, y, tc.rows, tc.in, tc.out)
			want := make([]float64, len(y))
			for i := range tc.rows {
				for o := range tc.out {
					var s float64
					for k := range tc.in {
						s += float64(x[i*tc.in+k]) * float64(w[o*tc.in+k])
					}
					if bias != nil {
						s += float64(bias[o])
					}
					want[i*tc.out+o] = s
				}
			}
			near(t, "y", y, want)
		}
		for _, acc := range []bool{false, true} {
			dx, dw := randSlice(r, len(x)), randSlice(r, len(w))
			wantDX, wantDW := make([]float64, len(dx)), make([]float64, len(dw))
			for i := range wantDX {
				if acc {
					wantDX[i] = float64(dx[i])
				}
			}
			for i := range wantDW {
				if acc {
					wantDW[i] = float64(dw[i])
				}
			}
			for i := range tc.rows {
				for o := range tc.out {
					g := float64(dy[i*tc.out+o])
					for k := range tc.in {
						wantDX[i*tc.in+k] += g * float64(w[o*tc.in+k])
						wantDW[o*tc.in+k] += g * float64(x[i*tc.in+k])
					}
				}
			}
			InputGrad(gemm.Sgemm, dx, dy, w, tc.rows, tc.in, tc.out, acc)
			WeightGrad(gemm.Sgemm, dw, dy, x, tc.rows, tc.in, tc.out, acc)
			near(t, "dx", dx, wantDX)
			near(t, "dW", dw, wantDW)
		}
		db := randSlice(r, tc.out)
		wantDB := make([]float64, tc.out)
		for o := range tc.out {
			wantDB[o] = float64(db[o])
			for i := range tc.rows {
				wantDB[o] += float64(dy[i*tc.out+o])
			}
		}
		BiasGrad(db, dy, tc.rows, tc.out)
		near(t, "db", db, wantDB)
	}
}

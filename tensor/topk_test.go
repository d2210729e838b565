package tensor_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/duel-ssl/duel/tensor"
	"github.com/duel-ssl/duel/tensor/backendtest"
	"github.com/duel-ssl/duel/tensor/hostless"
)

// topKSorted is the plain reference: every column sorted by the rule
// (larger first, equal values by lower column, -0 = +0, NaN last).
func topKSorted(row []float32, k int) ([]float32, []int32) {
	cols := make([]int, len(row))
	for i := range cols {
		cols[i] = i
	}
	rank := func(c int) float64 {
		if v := row[c]; v == v {
			return float64(v)
		}
		return math.Inf(-1)
	}
	slices.SortStableFunc(cols, func(a, b int) int {
		ra, rb := rank(a), rank(b)
		if ra == rb && (row[a] != row[a]) != (row[b] != row[b]) { // -Inf before NaN
			if row[a] != row[a] {
				return 1
			}
			return -1
		}
		if ra > rb {
			return -1
		}
		if ra < rb {
			return 1
		}
		return 0
	})
	v, ix := make([]float32, k), make([]int32, k)
	for j := range v {
		v[j], ix[j] = row[cols[j]], int32(cols[j])
	}
	return v, ix
}

// TestTopK checks tensor.TopK on the CPU (the capability, kernels/topk)
// against a full sort, and on "hostless" (the fallback: a copy to the host)
// and "hostlessfused" (the capability on the device) against the CPU bit
// for bit: quantised values (many ties), signed zeros, infinities and NaN,
// odd n, k = 1, k = n, m = 0, k = 0, a transposed (non-contiguous) input.
func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, tc := range [][3]int{{0, 5, 2}, {1, 1, 1}, {3, 7, 7}, {5, 9, 1}, {4, 33, 5}, {2, 1000, 200}, {9, 257, 256}, {37, 301, 20}, {3, 4, 0}} {
		m, n, k := tc[0], tc[1], tc[2]
		x := backendtest.TopKValues(r, m*n, 17, 40)
		for _, transposed := range []bool{false, true} {
			xt := tensor.FromSlice(x, m, n)
			if transposed {
				xt = tensor.FromSlice(tensor.FromSlice(x, m, n).T().Contiguous().Data(), n, m).T()
			}
			wv, wi, err := tensor.TopK(xt, k)
			if err != nil {
				t.Fatal(err)
			}
			if len(wv) != m*k || len(wi) != m*k {
				t.Fatalf("%v: %d values and %d indices, want %d", tc, len(wv), len(wi), m*k)
			}
			for row := 0; row < m; row++ {
				sv, si := topKSorted(x[row*n:(row+1)*n], k)
				for j := 0; j < k; j++ {
					if wi[row*k+j] != si[j] || math.Float32bits(wv[row*k+j]) != math.Float32bits(sv[j]) {
						t.Fatalf("%v row %d [%d]: (%v, col %d), sorted (%v, col %d)", tc, row, j, wv[row*k+j], wi[row*k+j], sv[j], si[j])
					}
				}
			}
			for _, dev := range []tensor.Device{hostless.Device, hostless.FusedDevice} {
				xd, err := xt.To(dev)
				if err != nil {
					t.Fatal(err)
				}
				if transposed {
					xd = xd.T().Contiguous().T() // strided on the device
				}
				gv, gi, err := tensor.TopK(xd, k)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gi, wi) || !slices.EqualFunc(gv, wv, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Fatalf("%v transposed=%v on %s: differs from the CPU", tc, transposed, dev)
				}
			}
		}
	}
}

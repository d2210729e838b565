package topk

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// reference sorts every column of x by the rule and keeps the first k.
func reference(x []float32, k int) ([]float32, []int32) {
	cols := make([]int, len(x))
	for i := range cols {
		cols[i] = i
	}
	better := func(a, b int) bool { // a before b
		va, vb := x[a], x[b]
		na, nb := va != va, vb != vb
		switch {
		case na && nb:
			return a < b
		case na:
			return false
		case nb:
			return true
		case va != vb:
			return va > vb
		}
		return a < b
	}
	slices.SortFunc(cols, func(a, b int) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	vals, idx := make([]float32, k), make([]int32, k)
	for j := 0; j < k; j++ {
		vals[j], idx[j] = x[cols[j]], int32(cols[j])
	}
	return vals, idx
}

// TestRows checks Rows against a full sort on quantised values (many
// ties), with signed zeros, infinities and NaNs, odd n, k = 1, k = n, m = 0.
func TestRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, tc := range [][3]int{{0, 5, 3}, {1, 1, 1}, {3, 7, 7}, {4, 9, 1}, {5, 33, 5}, {2, 1000, 200}, {17, 513, 64}, {40, 2001, 200}, {3, 300, 300}, {2, 5, 0}} {
		m, n, k := tc[0], tc[1], tc[2]
		for _, spec := range []bool{false, true} {
			x := make([]float32, m*n)
			for i := range x {
				x[i] = float32(r.IntN(21)-10) / 8
				if spec && r.IntN(10) == 0 {
					x[i] = specials[r.IntN(len(specials))]
				}
			}
			vals, idx := make([]float32, m*k), make([]int32, m*k)
			Rows(m, n, k, x, vals, idx)
			for row := 0; row < m; row++ {
				wv, wi := reference(x[row*n:(row+1)*n], k)
				for j := 0; j < k; j++ {
					g, w := vals[row*k+j], wv[j]
					if idx[row*k+j] != wi[j] || math.Float32bits(g) != math.Float32bits(w) {
						t.Fatalf("m=%d n=%d k=%d specials=%v row %d: [%d] = (%v, col %d), want (%v, col %d)",
							m, n, k, spec, row, j, g, idx[row*k+j], w, wi[j])
					}
				}
			}
		}
	}
}

func TestRowsBadArgs(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("k > n did not panic")
		}
	}()
	Rows(1, 2, 3, make([]float32, 2), make([]float32, 3), make([]int32, 3))
}

func TestKeyOrder(t *testing.T) {
	if ValueKey(float32(math.Copysign(0, -1))) != ValueKey(0) || ValueKey(float32(math.NaN())) >= ValueKey(float32(math.Inf(-1))) ||
		ValueKey(-1) >= ValueKey(-0.5) || ValueKey(0.5) >= ValueKey(1) || ValueKey(-1e-45) >= ValueKey(0) {
		t.Error("ValueKey misorders")
	}
	if Key(1, 3) <= Key(1, 4) || Col(Key(2, 12345)) != 12345 {
		t.Error("Key misorders columns")
	}
}

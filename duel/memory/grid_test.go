package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/kernels/igemm"
)

// TestGridOf checks gridOf against floor(2048*x + 1/2) on the values where
// rounding can go wrong: exact halves of the grid, their float32
// neighbours, the ends of [-1, 1] and beyond by a rounding error, zeros and
// random components.
func TestGridOf(t *testing.T) {
	var xs []float32
	for k := -4097; k <= 4097; k++ {
		half := float32(k) / 4096 // (2k)/4096 = grid point, odd k = half-way
		xs = append(xs, half, math.Nextafter32(half, -2), math.Nextafter32(half, 2))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, math.Nextafter32(1, 2), math.Nextafter32(-1, -2))
	rng := rand.New(rand.NewPCG(1, 1))
	for range 100000 {
		xs = append(xs, float32(rng.Float64()*2-1))
	}
	for _, x := range xs {
		want := math.Floor(float64(x)*gridScale + 0.5)
		if got := gridOf(x); float64(got) != want {
			t.Fatalf("gridOf(%v) = %d, want %v", x, got, want)
		}
	}
}

// TestNormalizeRows checks that normalizeRows, which takes rows eight at a
// time, gives the bits of normalizeRow row by row, in place or not, and
// reports the first bad row (zero, NaN or Inf) wherever it falls among the
// groups of four and the cores' ranges.
func TestNormalizeRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for _, tt := range []struct {
		n, z int
		bad  []int // rows made bad
	}{
		{0, 3, nil}, {1, 1, nil}, {3, 5, nil}, {4, 7, nil}, {7, 256, nil}, {130, 33, nil},
		{256, 256, nil}, {9, 4, []int{5}}, {9, 4, []int{8}}, {130, 16, []int{66, 3}},
		{130, 16, []int{127}}, {4, 2, []int{0}},
		// At least sharedValues values: shared out among the cores.
		{1030, 128, nil}, {1030, 128, []int{900, 520}}, {1030, 128, []int{1029}},
	} {
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("n=%d,z=%d,bad=%v,inplace=%v", tt.n, tt.z, tt.bad, inPlace), func(t *testing.T) {
				src := make([]float32, tt.n*tt.z)
				for i := range src {
					src[i] = float32(rng.NormFloat64())
				}
				wantBad := -1
				for k, r := range tt.bad {
					row := src[r*tt.z : (r+1)*tt.z]
					switch k % 3 {
					case 0:
						clear(row)
					case 1:
						row[tt.z-1] = float32(math.NaN())
					default:
						row[0] = float32(math.Inf(1))
					}
					if wantBad < 0 || r < wantBad {
						wantBad = r
					}
				}
				want := make([]float32, len(src))
				for r := 0; r < tt.n; r++ {
					normalizeRow(want[r*tt.z:(r+1)*tt.z], src[r*tt.z:(r+1)*tt.z])
				}
				dst := make([]float32, len(src))
				if inPlace {
					dst = slices.Clone(src)
				}
				err := normalizeRows(dst, map[bool][]float32{false: src, true: dst}[inPlace], tt.z)
				if wantBad >= 0 {
					if err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("row %d:", wantBad)) {
						t.Fatalf("error %v, want one about row %d", err, wantBad)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
						t.Fatalf("value %d: %v, want %v", i, dst[i], want[i])
					}
				}
			})
		}
	}
}

// TestFromUnitPacks checks that gridSet.fromUnit stores the grid rows of
// its unit rows, and packs them (packRows: transposed runs of pairs for an
// even z, SetRow for an odd one) exactly as igemm's Pack does, on odd and
// zero sizes, partial panels, and sets large enough to be shared out among
// the cores (parallelValues).
func TestFromUnitPacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, tt := range []struct{ n, z int }{
		{0, 4}, {1, 1}, {1, 2}, {3, 7}, {15, 32}, {16, 32}, {17, 32}, {47, 2},
		{48, 256}, {49, 30}, {100, 33}, {256, 256}, {1030, 128}, {700, 255},
	} {
		t.Run(fmt.Sprintf("n=%d,z=%d", tt.n, tt.z), func(t *testing.T) {
			src := make([]float32, tt.n*tt.z)
			for r := 0; r < tt.n; r++ {
				row := src[r*tt.z : (r+1)*tt.z]
				for i := range row {
					row[i] = float32(rng.NormFloat64())
				}
				if err := normalizeRow(row, row); err != nil {
					t.Fatal(err)
				}
			}
			var g gridSet
			g.reset(tt.n+5, tt.z) // stale contents
			for i := range g.rows {
				g.rows[i] = int16(i)
			}
			g.fromUnit(src, tt.n, tt.z)
			want := make([]int16, tt.n*tt.z)
			for i, x := range src {
				want[i] = int16(gridOf(x))
			}
			if !slices.Equal(g.rows[:tt.n*tt.z], want) {
				t.Fatal("grid rows differ from gridOf")
			}
			var p igemm.Packed
			p.Pack(want, tt.z, tt.n, tt.z)
			for P := 0; P < p.Panels(); P++ {
				if !slices.Equal(g.packed.Panel(P), p.Panel(P)) {
					t.Fatalf("panel %d differs from igemm's Pack", P)
				}
			}
		})
	}
}

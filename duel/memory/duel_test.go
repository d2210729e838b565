package memory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// recorder wraps a policy and records the evictions it returns.
type recorder struct {
	Policy
	log [][]int
}

func (r *recorder) Evict(a *Arrival) ([]int, error) {
	ev, err := r.Policy.Evict(a)
	r.log = append(r.log, slices.Clone(ev))
	return ev, err
}

// stream returns n random rows of z values with many exact ties: some rows
// repeat an earlier row exactly, some are drawn from a tiny alphabet
// ({-1, 0, 1} components), the rest are Gaussian.
func stream(rng *rand.Rand, n, z int) []float32 {
	rows := make([]float32, n*z)
	for r := 0; r < n; r++ {
		row := rows[r*z : (r+1)*z]
		switch u := rng.Float64(); {
		case r > 0 && u < 0.25:
			copy(row, rows[rng.IntN(r)*z:])
		case u < 0.5:
			for i := range row {
				row[i] = float32(rng.IntN(3) - 1)
			}
			row[rng.IntN(z)] = 1 // never a zero row
		default:
			for i := range row {
				row[i] = float32(rng.NormFloat64())
			}
		}
	}
	return rows
}

// TestFastEqualsReference feeds the same random streams to the reference
// and the fast DUEL and requires identical evictions at every update and
// identical memories (rows, ids, order) at the end.
func TestFastEqualsReference(t *testing.T) {
	type tc struct {
		k, b, z   int
		adm       Admission
		noBlock   bool // row-sum mode
		refreshAt int  // replace all rows (SetRows) after this update
		wide      bool // keys without ranks (see keyShift)
	}
	var cases []tc
	for _, s := range [][3]int{
		{1, 1, 1}, {1, 3, 2}, {2, 5, 3}, {3, 2, 4}, {7, 3, 5}, {10, 4, 8}, {13, 5, 3},
		{16, 16, 16}, {33, 8, 7}, {50, 7, 12}, {64, 24, 9}, {100, 30, 32}, {5, 12, 6},
		{300, 40, 21}, // whole tiles of the igemm kernel, several panels
		{257, 77, 40}, // several strips of batch rows (see strips), the last partial
	} {
		for _, adm := range []Admission{Protected, Compete} {
			for _, nb := range []bool{false, true} {
				cases = append(cases, tc{s[0], s[1], s[2], adm, nb, -1, false}, tc{s[0], s[1], s[2], adm, nb, 3, false})
			}
			cases = append(cases, tc{s[0], s[1], s[2], adm, false, -1, true})
		}
	}
	for i, c := range cases {
		name := fmt.Sprintf("K=%d,B=%d,Z=%d,%v,noblock=%v,refresh=%d,wide=%v", c.k, c.b, c.z, c.adm, c.noBlock, c.refreshAt, c.wide)
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			updates := 20 // two folds (foldEvery = 8)
			data := stream(rng, c.k+updates*c.b+c.b/2, c.z)
			fast := NewDUEL(c.adm)
			if c.noBlock {
				fast.MaxBlockBytes = 0
			}
			fast.wideKeys = c.wide
			recF, recR := &recorder{Policy: fast}, &recorder{Policy: NewDUELReference(c.adm)}
			mf, _ := New(c.k, c.z, recF)
			mr, _ := New(c.k, c.z, recR)
			for u, off := 0, 0; off < len(data)/c.z; u++ {
				// Uneven batches: the first one overflows the fill phase.
				n := min(c.b+u%3, len(data)/c.z-off)
				batch := data[off*c.z : (off+n)*c.z]
				off += n
				if _, err := mf.Add(batch, nil, nil, u); err != nil {
					t.Fatal(err)
				}
				if _, err := mr.Add(batch, nil, nil, u); err != nil {
					t.Fatal(err)
				}
				if u == c.refreshAt && mf.Len() > 0 {
					fresh := stream(rng, mf.Len(), c.z)
					if err := mf.SetRows(fresh); err != nil {
						t.Fatal(err)
					}
					if err := mr.SetRows(fresh); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !slices.EqualFunc(recF.log, recR.log, slices.Equal) {
				for u := range recR.log {
					if u < len(recF.log) && !slices.Equal(recF.log[u], recR.log[u]) {
						t.Fatalf("update %d: fast evicted %v, reference %v", u, recF.log[u], recR.log[u])
					}
				}
				t.Fatalf("fast made %d updates, reference %d", len(recF.log), len(recR.log))
			}
			if !slices.Equal(mf.IDs(), mr.IDs()) || !slices.Equal(mf.Rows(), mr.Rows()) {
				t.Fatalf("final memories differ:\nfast %v\nref  %v", mf.IDs(), mr.IDs())
			}
			if len(recR.log) == 0 {
				t.Fatal("no update went through the policy")
			}
		})
	}
}

// TestReferenceLiteral checks the reference on a case worked out by hand.
// Memory: a, a, b (a twice, b orthogonal); batch: c (orthogonal to both).
// Scores: the a's have 1+1+0.5 = 2.5, b has 2. The first a (position 0)
// has the highest score and the lowest position: it leaves.
func TestReferenceLiteral(t *testing.T) {
	a := &Arrival{
		Memory: []float32{1, 0, 0, 1, 0, 0, 0, 1, 0},
		Batch:  []float32{0, 0, 1},
		Z:      3,
	}
	for _, adm := range []Admission{Protected, Compete} {
		if got := duelReference(a, adm); !slices.Equal(got, []int{0}) {
			t.Errorf("%v: evicted %v, want [0]", adm, got)
		}
	}
	// Batch c, c: after the first a leaves and c enters, the second a and b
	// both score 2 (1+0.5+0.5): the tie goes to the second a (position 1).
	// In Compete mode the new c scores 2 as well but comes later.
	a.Batch = []float32{0, 0, 1, 0, 0, 1}
	for _, adm := range []Admission{Protected, Compete} {
		if got := duelReference(a, adm); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("%v: evicted %v, want [0 1]", adm, got)
		}
	}
}

// TestGridDotsExact checks that SGEMM computes grid dot products exactly,
// against int64 arithmetic, including rows that maximise the partial sums.
func TestGridDotsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, z := range []int{1, 3, 64, 255, 1024, 4099} {
		for _, kind := range []string{"gauss", "flat", "spike"} {
			n := 9
			raw := make([]float32, n*z)
			for i := range raw {
				switch kind {
				case "gauss":
					raw[i] = float32(rng.NormFloat64())
				case "flat": // every component 1/sqrt(z): the largest partial sums
					raw[i] = 1
				case "spike":
					raw[i] = float32(rng.NormFloat64()) * 1e-3
					if i%z == 0 {
						raw[i] = 1
					}
				}
			}
			unit := make([]float32, len(raw))
			if err := normalizeRows(unit, raw, z); err != nil {
				t.Fatal(err)
			}
			grid := make([]float32, len(unit))
			toGrid(grid, unit)
			got := make([]float32, n*n)
			gridDots(got, grid, grid, n, n, z)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					var want int64
					for c := 0; c < z; c++ {
						want += int64(grid[i*z+c]) * int64(grid[j*z+c])
					}
					if float64(got[i*n+j]) != float64(want) {
						t.Fatalf("z=%d %s: dot(%d,%d) = %v, want %d", z, kind, i, j, got[i*n+j], want)
					}
				}
			}
			// The int16 grid set (kernels/igemm, or SGEMM without VNNI)
			// gives the same integers, with its own rounding of the rows.
			var g gridSet
			g.reset(n, z)
			for r := 0; r < n; r++ {
				g.setUnit(r, unit[r*z:(r+1)*z])
			}
			for i, v := range g.rows {
				if float32(v) != grid[i] {
					t.Fatalf("z=%d %s: int16 grid[%d] = %d, want %v", z, kind, i, v, grid[i])
				}
			}
			gotI := make([]int32, n*n)
			g.dots(gotI, n, g.rows, n)
			for i, v := range gotI {
				if float32(v) != got[i] {
					t.Fatalf("z=%d %s: gridSet dot %d = %d, want %v", z, kind, i, v, got[i])
				}
			}
			// q of a row with itself is 1 to grid accuracy (sqrt(z)/4096
			// at worst, reached by flat rows).
			if q := qOf(got[0]); math.Abs(q-1) > math.Sqrt(float64(z))/4096 {
				t.Fatalf("z=%d %s: q(x,x) = %v, want ~1", z, kind, q)
			}
		}
	}
}

// TestDUELStateBytes checks the policy's state estimate on both sides of
// MaxBlockBytes.
func TestDUELStateBytes(t *testing.T) {
	d := NewDUEL(Protected)
	for _, tc := range []struct {
		k    int
		want float64
	}{{0, 0}, {4096, 4*4096*4096 + 24*4096}, {8192, 4*8192*8192 + 24*8192}, {8193, 4*256*8193 + 24*8193}} {
		if got := d.StateBytes(tc.k); got != tc.want {
			t.Errorf("StateBytes(%d) = %g, want %g", tc.k, got, tc.want)
		}
	}
}

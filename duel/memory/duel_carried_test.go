package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCarriedRowsExact checks the invariant of the carried block after every
// update: the dots it gives for each slot (block row, completed from the
// ring) equal the dots of the slots' grid rows computed afresh, through
// folds, batch sizes that grow (a new ring) and both admission modes.
func TestCarriedRowsExact(t *testing.T) {
	type tc struct {
		k, b, z int
		grow    bool // batches grow: the ring is laid out again
		uLimit  int  // stamps start again this often (0: never)
	}
	var cases []tc
	for _, s := range [][3]int{{7, 3, 5}, {64, 24, 9}, {257, 40, 33}} {
		cases = append(cases, tc{s[0], s[1], s[2], true, 0}, tc{s[0], s[1], s[2], false, 0}, tc{s[0], s[1], s[2], false, 11})
	}
	for _, c := range cases {
		for _, adm := range []Admission{Protected, Compete} {
			t.Run(fmt.Sprintf("K=%d,B=%d,Z=%d,grow=%v,ulimit=%d,%v", c.k, c.b, c.z, c.grow, c.uLimit, adm), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(c.k), 3))
				d := NewDUEL(adm)
				m, _ := New(c.k, c.z, d)
				if _, err := m.Add(stream(rng, c.k, c.z), nil, nil, 0); err != nil {
					t.Fatal(err)
				}
				for u := 0; u < 30; u++ {
					n := c.b
					if c.grow {
						n += u / 6
					}
					if _, err := m.Add(stream(rng, n, c.z), nil, nil, u); err != nil {
						t.Fatal(err)
					}
					f := &d.fast
					f.settle() // the update's end runs in the background
					if f.carried == nil {
						t.Fatal("no carried block")
					}
					if c.uLimit > 0 {
						f.carried.uLimit = c.uLimit
					}
					want := make([]int32, c.k*c.k)
					f.slots.dots(want, c.k, f.slots.rows, c.k)
					got := make([]int32, c.k)
					for r := 0; r < c.k; r++ {
						row := f.carried.row(got, r)
						for s, v := range row {
							if v != want[r*c.k+s] {
								t.Fatalf("update %d: dot of slots %d and %d is %d, want %d", u, r, s, v, want[r*c.k+s])
							}
						}
					}
				}
			})
		}
	}
}

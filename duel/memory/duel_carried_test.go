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
	for _, c := range []struct{ k, b, z int }{{7, 3, 5}, {64, 24, 9}, {257, 40, 33}} {
		for _, adm := range []Admission{Protected, Compete} {
			t.Run(fmt.Sprintf("K=%d,B=%d,Z=%d,%v", c.k, c.b, c.z, adm), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(c.k), 3))
				d := NewDUEL(adm)
				m, _ := New(c.k, c.z, d)
				if _, err := m.Add(stream(rng, c.k, c.z), nil, nil, 0); err != nil {
					t.Fatal(err)
				}
				for u := 0; u < 19; u++ {
					n := c.b + u/6 // the ring is laid out again twice
					if _, err := m.Add(stream(rng, n, c.z), nil, nil, u); err != nil {
						t.Fatal(err)
					}
					f := &d.fast
					if f.carried == nil {
						t.Fatal("no carried block")
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

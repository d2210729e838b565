package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSeededPolicyNames checks that SeededPolicyNames lists exactly the
// registered policies whose decisions depend on their seed: the same
// stream replayed with two seeds keeps other rows.
func TestSeededPolicyNames(t *testing.T) {
	seeded := SeededPolicyNames()
	if !slices.IsSorted(seeded) {
		t.Errorf("SeededPolicyNames() = %v, not sorted", seeded)
	}
	kept := func(name string, seed uint64) []int64 {
		p, err := NewPolicy(name, seed)
		if err != nil {
			t.Fatal(err)
		}
		const k, z, b, batches = 16, 4, 8, 20
		m, err := New(k, z, p)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2)) // the same stream for every seed
		for step := 0; step <= batches; step++ {
			n := b
			if step == 0 {
				n = k
			}
			rows := make([]float32, n*z)
			for i := range rows {
				rows[i] = float32(rng.NormFloat64())
			}
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = int64(int(m.Seen()) + i)
			}
			if _, err := m.Add(rows, ids, nil, step); err != nil {
				t.Fatal(err)
			}
		}
		return slices.Sorted(slices.Values(m.IDs()))
	}
	for _, name := range PolicyNames() {
		t.Run(name, func(t *testing.T) {
			differ := false
			for seed := uint64(2); seed < 6 && !differ; seed++ {
				differ = !slices.Equal(kept(name, 1), kept(name, seed))
			}
			if want := slices.Contains(seeded, name); differ != want {
				t.Errorf("decisions depend on the seed: %v; listed by SeededPolicyNames (%v): %v", differ, seeded, want)
			}
		})
	}
}

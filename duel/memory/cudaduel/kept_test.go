package cudaduel

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKeptPositions: keptPositions lists, in order, the positions of
// 0..K+B-1 not evicted, for memories that are and are not multiples of
// the bitmap's 64-bit words, no eviction, the whole batch evicted, the
// last position evicted, and random evictions.
func TestKeptPositions(t *testing.T) {
	want := func(k int, ev []int) []int {
		var out []int
		for p := range k + len(ev) {
			if !slices.Contains(ev, p) {
				out = append(out, p)
			}
		}
		return out
	}
	cases := []struct {
		k  int
		ev []int
	}{
		{5, nil},
		{0, []int{0, 1}},
		{3, []int{3, 4}},
		{64, []int{64}},
		{64, []int{0}},
		{63, []int{63, 0}},
		{130, []int{131, 129, 0, 64, 63}},
	}
	r := rand.New(rand.NewPCG(4, 5))
	for _, k := range []int{1, 63, 64, 65, 500, 4096} {
		b := 1 + r.IntN(300)
		cases = append(cases, struct {
			k  int
			ev []int
		}{k, r.Perm(k + b)[:b]})
	}
	for _, tc := range cases {
		got := make([]int, tc.k)
		keptPositions(got, tc.ev)
		if w := want(tc.k, tc.ev); !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
			t.Errorf("K %d, evicted %v: kept %v, want %v", tc.k, tc.ev, got, w)
		}
	}
}

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
		got, peer := make([]int, tc.k), make([]int, tc.k)
		keptPositions(got, tc.ev)
		keptPositionsBytes(peer, tc.ev)
		if w := want(tc.k, tc.ev); !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
			t.Errorf("K %d, evicted %v: kept %v, want %v", tc.k, tc.ev, got, w)
		}
		if !slices.Equal(peer, got) {
			t.Errorf("K %d: the benchmark's peer keeps %v, keptPositions %v", tc.k, peer, got)
		}
	}
}

// keptPositionsBytes is keptPositions as it was before the bitmap: a
// byte a position and a test of each (the benchmark's peer).
func keptPositionsBytes(kept, ev []int) {
	k := len(kept)
	gone := make([]bool, k+len(ev))
	for _, p := range ev {
		gone[p] = true
	}
	o := 0
	for p, g := range gone {
		if !g && o < k {
			kept[o] = p
			o++
		}
	}
}

// BenchmarkKeptPositions: the kept positions of a K 4096, B 256 update
// (256 random evictions), the bitmap against the byte-a-position loop.
func BenchmarkKeptPositions(b *testing.B) {
	const k, bb = 4096, 256
	ev := rand.New(rand.NewPCG(1, 2)).Perm(k + bb)[:bb]
	kept := make([]int, k)
	for _, f := range []struct {
		name string
		f    func(kept, ev []int)
	}{{"bitmap", keptPositions}, {"bytes", keptPositionsBytes}} {
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				f.f(kept, ev)
			}
		})
	}
}

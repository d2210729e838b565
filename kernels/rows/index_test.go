package rows

import (
	"math/rand/v2"
	"testing"
)

// TestTakePutAlong gathers one element per lane along each axis of a
// 3×4×5 tensor and scatters them back into zeros, against index
// arithmetic written out.
func TestTakePutAlong(t *testing.T) {
	shape := []int{3, 4, 5}
	src := make([]float32, 60)
	for i := range src {
		src[i] = float32(i)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for axis := range shape {
		outer, n, inner := SplitAxis(shape, axis)
		idx := make([]int, outer*inner)
		for i := range idx {
			idx[i] = r.IntN(n)
		}
		got := make([]float32, len(idx))
		TakeAlong(shape, axis, got, src, idx)
		back := make([]float32, len(src))
		PutAlong(shape, axis, back, got, idx)
		for o := range outer {
			for j := range inner {
				l := o*inner + j
				at := (o*n+idx[l])*inner + j
				if got[l] != src[at] || back[at] != src[at] {
					t.Fatalf("axis %d lane %d: took %v, put %v, want %v", axis, l, got[l], back[at], src[at])
				}
			}
		}
		nonzero := 0
		for _, v := range back {
			if v != 0 {
				nonzero++
			}
		}
		if want := len(idx); nonzero > want {
			t.Errorf("axis %d: PutAlong wrote %d elements, want at most %d", axis, nonzero, want)
		}
	}
}

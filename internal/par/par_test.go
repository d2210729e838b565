package par

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestFor checks that the ranges cover [0, n) exactly once, for worker
// counts below, at and above n, and zero or negative n.
func TestFor(t *testing.T) {
	for _, c := range []struct{ n, w int }{{0, 4}, {-3, 2}, {1, 1}, {1, 8}, {7, 2}, {7, 7}, {100, 3}, {100, 0}, {5, -1}} {
		t.Run(fmt.Sprintf("n=%d,w=%d", c.n, c.w), func(t *testing.T) {
			var mu sync.Mutex
			seen := make([]int, max(c.n, 0))
			calls := 0
			For(c.n, c.w, func(lo, hi int) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				for i := lo; i < hi; i++ {
					seen[i]++
				}
			})
			for i, s := range seen {
				if s != 1 {
					t.Fatalf("index %d visited %d times", i, s)
				}
			}
			if c.n <= 0 && calls != 0 {
				t.Fatalf("%d calls for an empty loop", calls)
			}
		})
	}
}

// TestWorkers checks the bounds of Workers: one below the grain, at most
// GOMAXPROCS.
func TestWorkers(t *testing.T) {
	p := runtime.GOMAXPROCS(0)
	for _, n := range []int{-1, 0, 1, 1<<15 - 1, 1 << 15, 1 << 16, 1 << 30} {
		w := Workers(n)
		if w < 1 || w > max(p, 1) || (n < 1<<15 && w != 1) {
			t.Errorf("Workers(%d) = %d with GOMAXPROCS %d", n, w, p)
		}
	}
}

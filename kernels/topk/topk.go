// Package topk selects the k largest elements of each row of a matrix: the
// loop behind the CPU backend's tensor.TopKBackend, and the host routine
// every other device falls back to (duel/eval's kNN neighbours).
//
// The order is total: a larger value first; equal values (-0 equal to +0)
// by increasing column; NaN below every number, NaNs by increasing column.
// For rows without NaN this is duel/eval's nearest-neighbour rule (of equal
// similarities, the row of lower index is the nearer), so the k selected
// are the ones its heap keeps, and the result is that set sorted, nearest
// first. kernels/cuda/topk.cu selects with the same key (Key).
package topk

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/duel-ssl/duel/internal/par"
)

// MaxN is the largest row length: columns are int32.
const MaxN = math.MaxInt32

// ValueKey maps v to an unsigned integer ordered as the rule orders values:
// -0 and +0 to the same key, NaN to 0, below every number.
func ValueKey(v float32) uint32 {
	if v != v {
		return 0
	}
	if v == 0 {
		return 0x80000000
	}
	u := math.Float32bits(v)
	if u&0x80000000 != 0 {
		return ^u
	}
	return u | 0x80000000
}

// Key is the element's rank key: the value's key above, 2^32-1 minus the
// column below; the larger key comes first, and no two columns share one.
func Key(v float32, col int) uint64 {
	return uint64(ValueKey(v))<<32 | uint64(0xFFFFFFFF-uint32(col))
}

// Col returns the column of a Key.
func Col(key uint64) int { return int(0xFFFFFFFF - uint32(key)) }

// Row sets vals[0..k) to the k first elements of x in the order and
// idx[0..k) to their columns, using heap (grown as needed) as scratch.
// It keeps a binary heap of the k best keys so far, the worst at its root,
// then sorts it.
func Row(x []float32, k int, vals []float32, idx []int32, heap *[]uint64) {
	if k == 0 {
		return
	}
	hp := (*heap)[:0]
	// root is the root's value while the heap is full: an x below it
	// (both numbers) cannot enter, decided by one float comparison.
	root := float32(math.NaN())
	for i, v := range x {
		if len(hp) == k {
			if v < root {
				continue
			}
			key := Key(v, i)
			if key <= hp[0] {
				continue
			}
			hp[0] = key
			siftDown(hp)
			root = x[Col(hp[0])]
			continue
		}
		hp = append(hp, Key(v, i))
		for c := len(hp) - 1; c > 0; { // sift up
			p := (c - 1) / 2
			if hp[c] >= hp[p] {
				break
			}
			hp[c], hp[p] = hp[p], hp[c]
			c = p
		}
		if len(hp) == k {
			root = x[Col(hp[0])]
		}
	}
	slices.Sort(hp)
	for j := range hp {
		key := hp[len(hp)-1-j]
		c := Col(key)
		vals[j], idx[j] = x[c], int32(c)
	}
	*heap = hp
}

// siftDown restores the min-heap after its root was replaced.
func siftDown(hp []uint64) {
	p := 0
	for {
		l := 2*p + 1
		if l >= len(hp) {
			return
		}
		c := l
		if r := l + 1; r < len(hp) && hp[r] < hp[l] {
			c = r
		}
		if hp[c] >= hp[p] {
			return
		}
		hp[c], hp[p] = hp[p], hp[c]
		p = c
	}
}

// Rows runs Row on each of the m rows of the row-major m×n matrix x,
// writing the row-major m×k vals and idx, the rows split among
// GOMAXPROCS goroutines. It panics unless 0 <= k <= n <= MaxN and the
// slices hold m·n and m·k elements.
func Rows(m, n, k int, x, vals []float32, idx []int32) {
	if m < 0 || k < 0 || k > n || n > MaxN || len(x) != m*n || len(vals) != m*k || len(idx) != m*k {
		panic(fmt.Sprintf("topk: Rows: %d rows of %d, k %d, with %d, %d and %d elements (want 0 <= k <= n <= 2^31-1, m·n, m·k, m·k)",
			m, n, k, len(x), len(vals), len(idx)))
	}
	if m == 0 || k == 0 {
		return
	}
	workers := min(runtime.GOMAXPROCS(0), m)
	if workers == 1 || m*n < 1<<14 {
		var h []uint64
		for r := 0; r < m; r++ {
			Row(x[r*n:(r+1)*n], k, vals[r*k:(r+1)*k], idx[r*k:(r+1)*k], &h)
		}
		return
	}
	par.For(m, workers, func(lo, hi int) {
		h := make([]uint64, 0, k)
		for r := lo; r < hi; r++ {
			Row(x[r*n:(r+1)*n], k, vals[r*k:(r+1)*k], idx[r*k:(r+1)*k], &h)
		}
	})
}

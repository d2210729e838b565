// Package par runs a loop over [0, n) on several goroutines: the one
// splitting helper shared by the packages that parallelise row loops, each
// with its own rule for how many goroutines the work deserves (Workers is
// the rule of the layers and of the convolution and BatchNorm kernels).
// Every parallel loop of the engine (For, Run, RunShares; kernels/gemm's
// products too) runs on one pool of worker goroutines that spin between
// loops, so that a loop does not wait for a parked thread to wake.
package par

import (
	"runtime"
)

// Workers returns how many goroutines to split work of about n scalar
// operations over: one per 2^15 operations (fewer cost more in start-up
// than they save), at most GOMAXPROCS.
func Workers(n int) int {
	const grain = 1 << 15
	p := runtime.GOMAXPROCS(0)
	if n < grain || p < 2 {
		return 1
	}
	if w := n / grain; w < p {
		return w
	}
	return p
}

// For calls f on w contiguous ranges covering [0, n) (range i is
// [i*n/w, (i+1)*n/w)), concurrently (see RunShares: the last range on the
// caller's goroutine, the others on pooled workers), and returns when all
// are done. w is clamped to [1, n]; for n <= 0, f is not called.
func For(n, w int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	w = max(1, min(w, n))
	if w == 1 {
		f(0, n)
		return
	}
	Run(w, func(i int) {
		i = w - 1 - i // share 0, the caller's, takes the last range
		f(i*n/w, (i+1)*n/w)
	})
}

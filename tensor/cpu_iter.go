package tensor

import (
	"runtime"

	"github.com/duel-ssl/duel/internal/par"
)

// collapse prepares operands of one shape for row-wise iteration: it drops
// size-1 dimensions and merges adjacent dimensions that are laid out
// contiguously with respect to each other in every operand. The result has
// at least one dimension. The element count of shape must not be zero.
func collapse(shape []int, strides ...[]int) ([]int, [][]int) {
	cs := make([]int, 0, len(shape)+1)
	cst := make([][]int, len(strides))
	for o := range cst {
		cst[o] = make([]int, 0, len(shape)+1)
	}
	for d, n := range shape {
		if n == 1 {
			continue
		}
		if last := len(cs) - 1; last >= 0 {
			merge := true
			for o := range strides {
				if cst[o][last] != strides[o][d]*n {
					merge = false
					break
				}
			}
			if merge {
				cs[last] *= n
				for o := range strides {
					cst[o][last] = strides[o][d]
				}
				continue
			}
		}
		cs = append(cs, n)
		for o := range strides {
			cst[o] = append(cst[o], strides[o][d])
		}
	}
	if len(cs) == 0 {
		cs = append(cs, 1)
		for o := range cst {
			cst[o] = append(cst[o], 1)
		}
	}
	return cs, cst
}

// eachRow calls row once per innermost row of a collapsed shape, with the
// storage offset of the row's first element in every operand and the row
// length.
func eachRow(shape []int, strides [][]int, base []int, row func(off []int, m int)) {
	outer := len(shape) - 1
	m := shape[outer]
	off := append([]int(nil), base...)
	if outer == 0 {
		row(off, m)
		return
	}
	for _, n := range shape[:outer] {
		if n == 0 {
			return
		}
	}
	idx := make([]int, outer)
	for {
		row(off, m)
		d := outer - 1
		for ; d >= 0; d-- {
			idx[d]++
			for o := range off {
				off[o] += strides[o][d]
			}
			if idx[d] < shape[d] {
				break
			}
			for o := range off {
				off[o] -= idx[d] * strides[o][d]
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// parallelMin is the work (elements, weighted by cost) above which an
// elementwise operation is split across two goroutines.
const parallelMin = 1 << 16

// parallelRows is eachRow, split in two halves run concurrently when the
// work is large and more than one CPU is available. Rows must be
// independent (every destination element written by exactly one row).
func parallelRows(work int, shape []int, strides [][]int, base []int, row func(off []int, m int)) {
	if work < parallelMin || runtime.GOMAXPROCS(0) < 2 {
		eachRow(shape, strides, base, row)
		return
	}
	n0 := shape[0]
	h := n0 / 2
	base2 := make([]int, len(base))
	for o := range base {
		base2[o] = base[o] + h*strides[o][0]
	}
	if len(shape) == 1 {
		par.Run(2, func(i int) {
			if i == 0 {
				row(base, h)
			} else {
				row(base2, n0-h)
			}
		})
		return
	}
	shape1 := append([]int(nil), shape...)
	shape2 := append([]int(nil), shape...)
	shape1[0], shape2[0] = h, n0-h
	par.Run(2, func(i int) {
		if i == 0 {
			eachRow(shape1, strides, base, row)
		} else {
			eachRow(shape2, strides, base2, row)
		}
	})
}

// parallelFlat calls f on [0, n), split into two halves run concurrently
// when the work is large and more than one CPU is available.
func parallelFlat(work, n int, f func(i, j int)) {
	if work < parallelMin || runtime.GOMAXPROCS(0) < 2 {
		f(0, n)
		return
	}
	h := n / 2
	par.Run(2, func(i int) {
		if i == 0 {
			f(0, h)
		} else {
			f(h, n)
		}
	})
}

// allZero reports whether every stride is 0 (a broadcast scalar).
func allZero(strides []int) bool {
	for _, s := range strides {
		if s != 0 {
			return false
		}
	}
	return true
}

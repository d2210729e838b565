package tensor

import (
	"fmt"
	"math"
)

// Reduce accumulates in float64 (one accumulator per destination element)
// and rounds once when storing into dst.
func (cpu) Reduce(op ReduceOp, dst, src Operand) {
	nd := numel(dst.Shape)
	if nd == 0 {
		return
	}
	acc := make([]float64, nd)
	switch op {
	case ReduceMax:
		for i := range acc {
			acc[i] = math.Inf(-1)
		}
	case ReduceMin:
		for i := range acc {
			acc[i] = math.Inf(1)
		}
	}
	ns := numel(src.Shape)
	if ns > 0 {
		accStrides := contiguousStrides(dst.Shape)
		for i, d := range dst.Shape {
			if d == 1 {
				accStrides[i] = 0
			}
		}
		shape, st := collapse(src.Shape, src.Strides, accStrides)
		last := len(shape) - 1
		ss, as := st[0][last], st[1][last]
		s := src.Buf.Host
		row := func(o []int, m int) {
			so, ao := o[0], o[1]
			if as == 0 {
				acc[ao] = reduceRow(op, acc[ao], s, so, m, ss)
				return
			}
			accumulateRow(op, acc, ao, as, s, so, m, ss)
		}
		if len(shape) > 1 && st[1][0] != 0 {
			// Halves of the outermost (kept) dimension write disjoint accumulators.
			parallelRows(ns, shape, st, []int{src.Offset, 0}, row)
		} else {
			eachRow(shape, st, []int{src.Offset, 0}, row)
		}
	}
	scale := 1.0
	if op == ReduceMean {
		scale = float64(nd) / float64(ns) // NaN when ns == 0
	}
	storeAcc(dst, acc, scale)
}

// reduceRow folds m elements of s starting at so with stride ss into acc.
func reduceRow(op ReduceOp, acc float64, s []float32, so, m, ss int) float64 {
	switch op {
	case ReduceSum, ReduceMean:
		if ss == 1 {
			return acc + sum64(s[so:so+m])
		}
		for i := 0; i < m; i, so = i+1, so+ss {
			acc += float64(s[so])
		}
	case ReduceMax:
		for i := 0; i < m; i, so = i+1, so+ss {
			acc = max(acc, float64(s[so]))
		}
	case ReduceMin:
		for i := 0; i < m; i, so = i+1, so+ss {
			acc = min(acc, float64(s[so]))
		}
	default:
		panic(fmt.Sprintf("tensor: unknown reduction %v", op))
	}
	return acc
}

// sum64 adds x in float64.
func sum64(x []float32) float64 {
	if useAVX2 && len(x) >= simdMin {
		return sum64AVX2(x)
	}
	return sum64Go(x)
}

// sum64Go adds x in float64 with four independent accumulators.
func sum64Go(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += float64(v[0])
		s1 += float64(v[1])
		s2 += float64(v[2])
		s3 += float64(v[3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// accumulateRow folds element i of a source row into acc[ao+i*as].
func accumulateRow(op ReduceOp, acc []float64, ao, as int, s []float32, so, m, ss int) {
	if as == 1 && ss == 1 && (op == ReduceSum || op == ReduceMean) {
		a, x := acc[ao:ao+m], s[so:so+m]
		if useAVX2 && m >= simdMin {
			accumulate64AVX2(a, x)
			return
		}
		for i := range a {
			a[i] += float64(x[i])
		}
		return
	}
	for i := 0; i < m; i, ao, so = i+1, ao+as, so+ss {
		v := float64(s[so])
		switch op {
		case ReduceSum, ReduceMean:
			acc[ao] += v
		case ReduceMax:
			acc[ao] = max(acc[ao], v)
		case ReduceMin:
			acc[ao] = min(acc[ao], v)
		default:
			panic(fmt.Sprintf("tensor: unknown reduction %v", op))
		}
	}
}

// storeAcc writes scale*acc (row-major over dst's shape) into dst.
func storeAcc(dst Operand, acc []float64, scale float64) {
	d := dst.Buf.Host
	if isContiguous(dst.Shape, dst.Strides) {
		out := d[dst.Offset : dst.Offset+len(acc)]
		for i := range out {
			out[i] = float32(acc[i] * scale)
		}
		return
	}
	i := 0
	forEachOffset(dst.Shape, dst.Strides, dst.Offset, func(off int) {
		d[off] = float32(acc[i] * scale)
		i++
	})
}

func (cpu) ArgMax(dst []int, src Operand, axis int) {
	shape, strides := moveAxisLast(src.Shape, src.Strides, axis)
	m, st := shape[len(shape)-1], strides[len(strides)-1]
	s := src.Buf.Host
	i := 0
	forEachOffset(shape[:len(shape)-1], strides[:len(strides)-1], src.Offset, func(off int) {
		best, bi := s[off], 0
		for j, p := 1, off+st; j < m; j, p = j+1, p+st {
			if s[p] > best {
				best, bi = s[p], j
			}
		}
		dst[i] = bi
		i++
	})
}

// moveAxisLast returns shape and strides with axis moved to the end.
func moveAxisLast(shape, strides []int, axis int) ([]int, []int) {
	sh := make([]int, 0, len(shape))
	st := make([]int, 0, len(shape))
	for i := range shape {
		if i != axis {
			sh = append(sh, shape[i])
			st = append(st, strides[i])
		}
	}
	return append(sh, shape[axis]), append(st, strides[axis])
}

// isContiguous reports whether shape and strides are dense row-major.
func isContiguous(shape, strides []int) bool {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != s {
			return false
		}
		s *= shape[i]
	}
	return true
}

package tensor

import (
	"fmt"
	"math"
	"slices"
)

// AllClose reports whether a and b have the same shape and every pair of
// elements satisfies |a-b| <= atol + rtol*|b|. NaN is close to nothing.
func AllClose(a, b *Tensor, rtol, atol float64) bool {
	if !slices.Equal(a.shape, b.shape) {
		return false
	}
	x, y := hostValues(a), hostValues(b)
	for i := range x {
		d := math.Abs(float64(x[i]) - float64(y[i]))
		if !(d <= atol+rtol*math.Abs(float64(y[i]))) {
			if math.IsInf(float64(x[i]), 0) && x[i] == y[i] {
				continue
			}
			return false
		}
	}
	return true
}

// MaxAbsDiff returns the largest |a-b| over the elements (NaN if any
// difference is NaN). It panics if the shapes differ.
func MaxAbsDiff(a, b *Tensor) float64 {
	if !slices.Equal(a.shape, b.shape) {
		panic(fmt.Sprintf("tensor.MaxAbsDiff: shapes %v and %v differ", a.shape, b.shape))
	}
	x, y := hostValues(a), hostValues(b)
	m := 0.0
	for i := range x {
		d := math.Abs(float64(x[i]) - float64(y[i]))
		if d > m || math.IsNaN(d) {
			m = d
			if math.IsNaN(d) {
				return d
			}
		}
	}
	return m
}

// hostValues returns t's elements in row-major order in host memory.
func hostValues(t *Tensor) []float32 {
	if t.device != CPU {
		h, err := t.To(CPU)
		if err != nil {
			panic(fmt.Sprintf("tensor: %v", err))
		}
		t = h
	}
	return t.Contiguous().Data()
}

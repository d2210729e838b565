package eval

import (
	"fmt"
	"math"
)

// Features is a matrix of N feature rows of dimension D (row-major in X) with
// the class label of each row.
type Features struct {
	N, D   int
	X      []float32 // N*D values, row i is X[i*D:(i+1)*D]
	Labels []int32   // N labels in [0, number of classes)
}

// NewFeatures checks that x holds len(labels) rows of d values, that every
// value is finite and every label is non-negative, and wraps them (no copy).
func NewFeatures(x []float32, labels []int32, d int) (*Features, error) {
	if d <= 0 {
		return nil, fmt.Errorf("feature dimension %d, expected > 0", d)
	}
	if len(x) != len(labels)*d {
		return nil, fmt.Errorf("%d feature values for %d labels of dimension %d, expected %d", len(x), len(labels), d, len(labels)*d)
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("feature row %d column %d is %v, expected a finite value", i/d, i%d, v)
		}
	}
	for i, l := range labels {
		if l < 0 {
			return nil, fmt.Errorf("label of row %d is %d, expected >= 0", i, l)
		}
	}
	return &Features{N: len(labels), D: d, X: x, Labels: labels}, nil
}

// Row returns row i (a slice of X, not a copy).
func (f *Features) Row(i int) []float32 { return f.X[i*f.D : (i+1)*f.D] }

// NumClasses returns 1 + the largest label (0 for no rows).
func (f *Features) NumClasses() int {
	n := 0
	for _, l := range f.Labels {
		n = max(n, int(l)+1)
	}
	return n
}

// Normalized returns a copy whose rows have unit L2 norm, computed like
// torch.nn.functional.normalize: x / max(‖x‖, 1e-12), so a zero row stays zero.
func (f *Features) Normalized() *Features {
	out := &Features{N: f.N, D: f.D, X: make([]float32, len(f.X)), Labels: f.Labels}
	for i := 0; i < f.N; i++ {
		NormalizeInto(out.Row(i), f.Row(i))
	}
	return out
}

// NormalizeInto writes src / max(‖src‖₂, 1e-12) into dst (same length),
// accumulating the norm in float64.
func NormalizeInto(dst, src []float32) {
	var s float64
	for _, v := range src {
		s += float64(v) * float64(v)
	}
	inv := 1 / math.Max(math.Sqrt(s), 1e-12)
	for j, v := range src {
		dst[j] = float32(float64(v) * inv)
	}
}

// Subset returns the rows idx (copied), in that order.
func (f *Features) Subset(idx []int) *Features {
	out := &Features{N: len(idx), D: f.D, X: make([]float32, len(idx)*f.D), Labels: make([]int32, len(idx))}
	for k, i := range idx {
		copy(out.Row(k), f.Row(i))
		out.Labels[k] = f.Labels[i]
	}
	return out
}

// BalancedSubset returns the indices of at most n rows of labels taken
// round-robin over the classes (the first row of each class in index order,
// then the second, ...), sorted increasingly: a deterministic subset whose
// class counts differ by at most one where the classes have enough rows.
// n <= 0 or n >= len(labels) selects every row.
func BalancedSubset(labels []int32, n int) []int {
	if n <= 0 || n >= len(labels) {
		idx := make([]int, len(labels))
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	var byClass [][]int
	for i, l := range labels {
		for int(l) >= len(byClass) {
			byClass = append(byClass, nil)
		}
		byClass[l] = append(byClass[l], i)
	}
	take := make([]bool, len(labels))
	got := 0
	for round := 0; got < n; round++ {
		for _, rows := range byClass {
			if round < len(rows) && got < n {
				take[rows[round]] = true
				got++
			}
		}
	}
	idx := make([]int, 0, n)
	for i, t := range take {
		if t {
			idx = append(idx, i)
		}
	}
	return idx
}

package tensor

import (
	"math"
	"math/rand/v2"
)

// RandN returns a tensor of standard normal samples drawn from r.
func RandN(r *rand.Rand, shape ...int) *Tensor {
	t := New(shape...)
	for i := range t.data {
		t.data[i] = float32(r.NormFloat64())
	}
	return t
}

// RandU returns a tensor of samples uniform in [lo, hi) drawn from r.
func RandU(r *rand.Rand, lo, hi float32, shape ...int) *Tensor {
	t := New(shape...)
	w := float64(hi) - float64(lo)
	for i := range t.data {
		v := float32(float64(lo) + w*r.Float64())
		if v >= hi && hi > lo { // rounding up to hi
			v = math.Nextafter32(hi, lo)
		}
		t.data[i] = v
	}
	return t
}

// Arange returns the 1-d tensor 0, 1, ..., n-1.
func Arange(n int) *Tensor {
	t := New(n)
	for i := range t.data {
		t.data[i] = float32(i)
	}
	return t
}

// Eye returns the n x n identity matrix.
func Eye(n int) *Tensor {
	t := New(n, n)
	for i := 0; i < n; i++ {
		t.data[i*n+i] = 1
	}
	return t
}

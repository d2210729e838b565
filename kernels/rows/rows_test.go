package rows

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLanesAnyAxisSameBits checks that every row kernel along a middle
// axis (lanes gathered into scratch) gives the bits it gives along the
// last axis of the transposed data, over lanes split across goroutines.
func TestLanesAnyAxisSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const a, n, b = 9, 301, 17 // a·b lanes of n: above parallelWork
	x := make([]float32, a*n*b)
	g := make([]float32, len(x))
	for i := range x {
		x[i], g[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	// xt holds x with the middle axis last: shape a×b×n.
	tr := func(v []float32) []float32 {
		o := make([]float32, len(v))
		for i := range a {
			for k := range n {
				for j := range b {
					o[(i*b+j)*n+k] = v[(i*n+k)*b+j]
				}
			}
		}
		return o
	}
	mid, last := []int{a, n, b}, []int{a, b, n}
	check := func(name string, f func(shape []int, axis int, x, g []float32) [][]float32) {
		want, got := f(last, 2, tr(x), tr(g)), f(mid, 1, x, g)
		for i := range want {
			if !slices.EqualFunc(tr(got[i]), want[i], func(p, q float32) bool { return math.Float32bits(p) == math.Float32bits(q) }) {
				t.Errorf("%s (output %d) along a middle axis differs from the last axis", name, i)
			}
		}
	}
	check("Softmax", func(s []int, ax int, x, _ []float32) [][]float32 {
		y := make([]float32, len(x))
		Softmax(s, ax, y, x)
		return [][]float32{y}
	})
	check("SoftmaxBack", func(s []int, ax int, x, g []float32) [][]float32 {
		y, d := make([]float32, len(x)), make([]float32, len(x))
		Softmax(s, ax, y, x)
		SoftmaxBack(s, ax, d, g, y)
		return [][]float32{d}
	})
	check("LogSoftmax", func(s []int, ax int, x, g []float32) [][]float32 {
		y, p, d := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
		LogSoftmax(s, ax, y, p, x)
		LogSoftmaxBack(s, ax, d, g, p)
		return [][]float32{y, d}
	})
	check("L2Normalize", func(s []int, ax int, x, g []float32) [][]float32 {
		y, d := make([]float32, len(x)), make([]float32, len(x))
		L2Normalize(s, ax, y, x, 1e-12)
		L2NormalizeBack(s, ax, d, g, x, y, 1e-12)
		return [][]float32{y, d}
	})
}

// Package elemgrad holds the CPU kernels of the backward passes of
// autograd's elementwise unary operations: each sets d, the input's
// gradient, from g, the output's gradient, and in, the operation's input x
// or output y (as each function says), all slices of equal length. The
// tensor CPU backend exposes them as its tensor.UnaryGradBackend
// capability; Run splits large slices across goroutines (the elements are
// independent, so the results do not depend on the split).
package elemgrad

import (
	"math"
	"runtime"

	"github.com/duel-ssl/duel/internal/par"
)

// parallelWork is the number of elements above which Run splits the work
// across goroutines.
const parallelWork = 1 << 15

// Kernel is one of this package's backward loops.
type Kernel func(d, g, in []float32)

// Run calls k on d, g and in, split across goroutines for large slices.
func Run(k Kernel, d, g, in []float32) {
	n := len(d)
	g, in = g[:n], in[:n]
	w := runtime.GOMAXPROCS(0)
	if n < parallelWork {
		w = 1
	}
	par.For(n, w, func(lo, hi int) { k(d[lo:hi], g[lo:hi], in[lo:hi]) })
}

// Square is the backward pass of x²: in = x, d = 2x·g.
func Square(d, g, x []float32) {
	for i, v := range x {
		d[i] = 2 * v * g[i]
	}
}

// Abs is the backward pass of |x|: in = x, d = sign(x)·g, 0 where x is 0 or NaN.
func Abs(d, g, x []float32) {
	for i, v := range x {
		switch {
		case v > 0:
			d[i] = g[i]
		case v < 0:
			d[i] = -g[i]
		default:
			d[i] = 0
		}
	}
}

// Exp is the backward pass of eˣ: in = y, d = y·g.
func Exp(d, g, y []float32) {
	for i, v := range y {
		d[i] = v * g[i]
	}
}

// Log is the backward pass of ln x: in = x, d = g / x.
func Log(d, g, x []float32) {
	for i, v := range x {
		d[i] = g[i] / v
	}
}

// Sqrt is the backward pass of √x: in = y, d = g / (2y).
func Sqrt(d, g, y []float32) {
	for i, v := range y {
		d[i] = g[i] / (2 * v)
	}
}

// Pow returns the kernel of x raised to p: in = x, d = p·x^(p-1)·g with
// p·x^(p-1) in float64, rounded once.
func Pow(p float32) Kernel {
	pp := float64(p)
	return func(d, g, x []float32) {
		for i, v := range x {
			d[i] = float32(pp*math.Pow(float64(v), pp-1)) * g[i]
		}
	}
}

// ReLU is the backward pass of max(x, 0): in = y, d = g where y > 0, else 0.
func ReLU(d, g, y []float32) {
	for i, v := range y {
		if v > 0 {
			d[i] = g[i]
		} else {
			d[i] = 0
		}
	}
}

// Tanh is the backward pass of tanh x: in = y, d = (1 - y²)·g, y² rounded
// before the subtraction (the conversion keeps arm64's compiler from
// fusing them: the bits are amd64's and the composed fallback's).
func Tanh(d, g, y []float32) {
	for i, v := range y {
		d[i] = (1 - float32(v*v)) * g[i]
	}
}

// Sigmoid is the backward pass of the logistic function: in = y, d = y(1 - y)·g.
func Sigmoid(d, g, y []float32) {
	for i, v := range y {
		d[i] = v * (1 - v) * g[i]
	}
}

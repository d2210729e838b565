// Package pool holds the pooling passes over float32 activations: max
// pooling over square windows with zero padding counted as -inf (PyTorch's
// MaxPool2d, floor mode) and adaptive average pooling (PyTorch's
// AdaptiveAvgPool2d), forward and backward, split over goroutines by
// plane.
//
// # Layout
//
// An activation of shape (N, C, H, W) is N*C planes of H x W floats,
// row-major, one after the other; the order of the planes (sample-major
// NCHW or channel-major CNHW) does not matter, the output keeps it.
package pool

import (
	"math"

	"github.com/duel-ssl/duel/internal/par"
)

// Geom is the geometry of a pooling pass: Planes input planes of H x W
// floats pooled to planes of OH x OW.
type Geom struct {
	Planes, H, W, OH, OW int
}

// MaxForward writes into y the maximum of each k x k window (stride s,
// padding p) of the planes of x, and into arg the index inside its input
// plane of the element each output took (the first of equal maxima; a NaN
// propagates, as in PyTorch).
func MaxForward(g Geom, k, s, p int, x, y []float32, arg []int32) {
	h, w, oh, ow := g.H, g.W, g.OH, g.OW
	par.For(g.Planes, par.Workers(len(x)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			img := x[pl*h*w : (pl+1)*h*w]
			for oi := range oh {
				for oj := range ow {
					best, bi := float32(math.Inf(-1)), int32(-1)
					for ki := range k {
						ih := oi*s - p + ki
						if ih < 0 || ih >= h {
							continue
						}
						for kj := range k {
							iw := oj*s - p + kj
							if iw < 0 || iw >= w {
								continue
							}
							// NaN propagates as in PyTorch.
							if v := img[ih*w+iw]; v > best || bi < 0 || v != v {
								best, bi = v, int32(ih*w+iw)
							}
						}
					}
					o := pl*oh*ow + oi*ow + oj
					y[o], arg[o] = best, bi
				}
			}
		}
	})
}

// MaxBackward adds (or stores, when !acc) the gradient of a max pooling
// into dx: each output's gradient dy goes to the input element arg
// (MaxForward's) chose, zero elsewhere.
func MaxBackward(g Geom, dx, dy []float32, arg []int32, acc bool) {
	h, w, oh, ow := g.H, g.W, g.OH, g.OW
	if !acc {
		clear(dx)
	}
	for pl := range g.Planes {
		plane := dx[pl*h*w : (pl+1)*h*w]
		for o := pl * oh * ow; o < (pl+1)*oh*ow; o++ {
			plane[arg[o]] += dy[o]
		}
	}
}

// window returns the input rows (or columns) [lo, hi) of output row i of
// out over in: [floor(i*in/out), ceil((i+1)*in/out)).
func window(i, out, in int) (int, int) { return i * in / out, ((i+1)*in + out - 1) / out }

// AdaptiveAvgForward writes into y the average of each window of the
// planes of x: output (i, j) averages input rows window(i, OH, H) and
// columns window(j, OW, W).
func AdaptiveAvgForward(g Geom, x, y []float32) {
	h, w, oh, ow := g.H, g.W, g.OH, g.OW
	par.For(g.Planes, par.Workers(len(x)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			img := x[pl*h*w : (pl+1)*h*w]
			for oi := range oh {
				h0, h1 := window(oi, oh, h)
				for oj := range ow {
					w0, w1 := window(oj, ow, w)
					var sum float32
					for ih := h0; ih < h1; ih++ {
						for _, v := range img[ih*w+w0 : ih*w+w1] {
							sum += v
						}
					}
					y[pl*oh*ow+oi*ow+oj] = sum / float32((h1-h0)*(w1-w0))
				}
			}
		}
	})
}

// AdaptiveAvgBackward adds (or stores, when !acc) the gradient of an
// adaptive average pooling into dx: each output's gradient dy, divided by
// its window's size, goes to every element of its window.
func AdaptiveAvgBackward(g Geom, dx, dy []float32, acc bool) {
	h, w, oh, ow := g.H, g.W, g.OH, g.OW
	if !acc {
		clear(dx)
	}
	par.For(g.Planes, par.Workers(len(dx)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			plane := dx[pl*h*w : (pl+1)*h*w]
			for oi := range oh {
				h0, h1 := window(oi, oh, h)
				for oj := range ow {
					w0, w1 := window(oj, ow, w)
					d := dy[pl*oh*ow+oi*ow+oj] / float32((h1-h0)*(w1-w0))
					for ih := h0; ih < h1; ih++ {
						row := plane[ih*w+w0 : ih*w+w1]
						for j := range row {
							row[j] += d
						}
					}
				}
			}
		}
	})
}

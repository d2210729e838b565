package nn

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/conv"
)

// MaxPool2d takes the maximum over square windows of (N, C, H, W) inputs,
// PyTorch's nn.MaxPool2d (padding counts as -inf, floor mode).
type MaxPool2d struct {
	Kernel, Stride, Padding int

	arena *Arena
}

// SetArena makes the layer allocate from a.
func (mp *MaxPool2d) SetArena(a *Arena) { mp.arena = a }

// NewMaxPool2d returns a max-pooling layer.
func NewMaxPool2d(kernel, stride, padding int) *MaxPool2d {
	if kernel <= 0 || stride <= 0 || padding < 0 || 2*padding > kernel {
		panic(fmt.Sprintf("nn.NewMaxPool2d: bad geometry kernel=%d stride=%d padding=%d", kernel, stride, padding))
	}
	return &MaxPool2d{Kernel: kernel, Stride: stride, Padding: padding}
}

// Members returns nil.
func (*MaxPool2d) Members() []Member { return nil }

// Forward pools x of shape (N, C, H, W).
func (mp *MaxPool2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 {
		panic(fmt.Sprintf("nn.MaxPool2d: input of shape %v, expected (N, C, H, W)", shape))
	}
	n, c, h, w := shape[0], shape[1], shape[2], shape[3]
	k, s, p := mp.Kernel, mp.Stride, mp.Padding
	oh, ow := conv.OutSize(h, k, s, p), conv.OutSize(w, k, s, p)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn.MaxPool2d: input %dx%d too small for kernel %d", h, w, k))
	}
	xd, cm := planes(x.Value)
	y := mp.arena.tensor(cm, n, c, oh, ow)
	yd := storage(y)
	// arg holds, for each output, the index of its maximum inside the plane.
	arg := make([]int32, len(yd))
	parallelFor(n*c, workers(len(xd)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			img := xd[pl*h*w : (pl+1)*h*w]
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
					yd[o], arg[o] = best, bi
				}
			}
		}
	})
	return tp.Record(y, func(out *autograd.Var) {
		defer mp.arena.release(out.Grad)
		dy := gradOf(out)
		dx, acc := mp.arena.gradSlot(x)
		if dx == nil {
			return
		}
		if !acc {
			clear(dx)
		}
		for pl := range n * c {
			plane := dx[pl*h*w : (pl+1)*h*w]
			for o := pl * oh * ow; o < (pl+1)*oh*ow; o++ {
				plane[arg[o]] += dy[o]
			}
		}
	}, x)
}

// AdaptiveAvgPool2d averages (N, C, H, W) inputs over an OutH x OutW grid of
// windows, PyTorch's nn.AdaptiveAvgPool2d: window i spans
// [floor(i*H/OutH), ceil((i+1)*H/OutH)).
type AdaptiveAvgPool2d struct {
	OutH, OutW int

	arena *Arena
}

// SetArena makes the layer allocate from a.
func (ap *AdaptiveAvgPool2d) SetArena(a *Arena) { ap.arena = a }

// NewAdaptiveAvgPool2d returns an adaptive average-pooling layer; (1, 1) is
// global average pooling.
func NewAdaptiveAvgPool2d(outH, outW int) *AdaptiveAvgPool2d {
	if outH <= 0 || outW <= 0 {
		panic(fmt.Sprintf("nn.NewAdaptiveAvgPool2d: bad output size %dx%d", outH, outW))
	}
	return &AdaptiveAvgPool2d{OutH: outH, OutW: outW}
}

// Members returns nil.
func (*AdaptiveAvgPool2d) Members() []Member { return nil }

// Forward pools x of shape (N, C, H, W) to (N, C, OutH, OutW).
func (ap *AdaptiveAvgPool2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 {
		panic(fmt.Sprintf("nn.AdaptiveAvgPool2d: input of shape %v, expected (N, C, H, W)", shape))
	}
	n, c, h, w := shape[0], shape[1], shape[2], shape[3]
	oh, ow := ap.OutH, ap.OutW
	xd, cm := planes(x.Value)
	y := ap.arena.tensor(cm, n, c, oh, ow)
	yd := storage(y)
	win := func(i, out, in int) (int, int) { return i * in / out, ((i+1)*in + out - 1) / out }
	parallelFor(n*c, workers(len(xd)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			img := xd[pl*h*w : (pl+1)*h*w]
			for oi := range oh {
				h0, h1 := win(oi, oh, h)
				for oj := range ow {
					w0, w1 := win(oj, ow, w)
					var sum float32
					for ih := h0; ih < h1; ih++ {
						for _, v := range img[ih*w+w0 : ih*w+w1] {
							sum += v
						}
					}
					yd[pl*oh*ow+oi*ow+oj] = sum / float32((h1-h0)*(w1-w0))
				}
			}
		}
	})
	return tp.Record(y, func(out *autograd.Var) {
		defer ap.arena.release(out.Grad)
		dy := gradOf(out)
		dx, acc := ap.arena.gradSlot(x)
		if dx == nil {
			return
		}
		if !acc {
			clear(dx)
		}
		parallelFor(n*c, workers(len(dx)), func(lo, hi int) {
			for pl := lo; pl < hi; pl++ {
				plane := dx[pl*h*w : (pl+1)*h*w]
				for oi := range oh {
					h0, h1 := win(oi, oh, h)
					for oj := range ow {
						w0, w1 := win(oj, ow, w)
						g := dy[pl*oh*ow+oi*ow+oj] / float32((h1-h0)*(w1-w0))
						for ih := h0; ih < h1; ih++ {
							row := plane[ih*w+w0 : ih*w+w1]
							for j := range row {
								row[j] += g
							}
						}
					}
				}
			}
		})
	}, x)
}

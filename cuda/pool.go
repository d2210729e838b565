package cuda

import (
	"fmt"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

var _ tensor.PoolBackend = (*Backend)(nil)

// dense returns the device address of the dense operand o, checking that it
// holds n elements in row-major order inside its buffer (the dummy address
// when n is 0). name names the operand in the panic message.
func (be *Backend) dense(op, name string, o tensor.Operand, n int) driver.DevicePtr {
	p, bad := be.denseAddr(op, o, n)
	if bad != "" {
		panic(fmt.Sprintf("cuda: Backend.%s: %s %s", op, name, bad))
	}
	return p
}

// denseAddr is dense without the panic: the address, or what is wrong
// with o (a phrase to follow the operand's name), so that a caller naming
// many operands formats a name only when one is wrong.
func (be *Backend) denseAddr(op string, o tensor.Operand, n int) (driver.DevicePtr, string) {
	d := buf(op, o.Buf)
	cnt, want := 1, 1
	for _, s := range o.Shape {
		cnt *= s
	}
	for k := len(o.Shape) - 1; k >= 0; k-- {
		if o.Shape[k] != 1 && o.Strides[k] != want {
			return 0, fmt.Sprintf("of shape %v strides %v is not dense", o.Shape, o.Strides)
		}
		want *= o.Shape[k]
	}
	if cnt != n || o.Offset < 0 || o.Offset+n > d.n {
		return 0, fmt.Sprintf("has %d elements at %d of a buffer of %d, want %d", cnt, o.Offset, d.n, n)
	}
	if n == 0 {
		return be.dummy, ""
	}
	return d.at(o.Offset), ""
}

// b2i returns 1 for true, 0 for false (the kernels' flags).
func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// MaxPool2d sets y to the maxima of the k×k windows of x and arg to their
// positions inside their planes, int32 in the bits of arg's elements
// (pool.cu's maxpool2d_f32, one thread per output).
func (be *Backend) MaxPool2d(y, x, arg tensor.Operand, g tensor.PoolGeom, k, s, p int) {
	const op = "MaxPool2d"
	nin, nout := g.Planes*g.H*g.W, g.Planes*g.OH*g.OW
	yp, xp, ap := be.dense(op, "y", y, nout), be.dense(op, "x", x, nin), be.dense(op, "arg", arg, nout)
	if nout == 0 {
		return
	}
	be.queued(op, kc.Maxpool2dF32(be.g, be.grid(int64(nout)), yp, ap, xp, int64(g.Planes),
		int32(g.H), int32(g.W), int32(g.OH), int32(g.OW), int32(k), int32(s), int32(p)))
}

// MaxPool2dBack sets (adds, when acc) dx: each dy goes to the input element
// arg names (pool.cu's maxpool2d_back_f32: one thread per input element
// gathers, in increasing order, the outputs whose window holds it and
// chose it: deterministic, no atomics).
func (be *Backend) MaxPool2dBack(dx, dy, arg tensor.Operand, g tensor.PoolGeom, k, s, p int, acc bool) {
	const op = "MaxPool2dBack"
	nin, nout := g.Planes*g.H*g.W, g.Planes*g.OH*g.OW
	dxp, dyp, ap := be.dense(op, "dx", dx, nin), be.dense(op, "dy", dy, nout), be.dense(op, "arg", arg, nout)
	if nin == 0 {
		return
	}
	be.queued(op, kc.Maxpool2dBackF32(be.g, be.grid(int64(nin)), dxp, dyp, ap, int64(g.Planes),
		int32(g.H), int32(g.W), int32(g.OH), int32(g.OW), int32(k), int32(s), int32(p), b2i(acc)))
}

// AdaptiveAvgPool2d sets y to the means of PyTorch's adaptive windows of x
// (pool.cu's adaptive_avgpool2d_f32, one thread per output, float32 sums in
// kernels/pool's order).
func (be *Backend) AdaptiveAvgPool2d(y, x tensor.Operand, g tensor.PoolGeom) {
	const op = "AdaptiveAvgPool2d"
	nin, nout := g.Planes*g.H*g.W, g.Planes*g.OH*g.OW
	yp, xp := be.dense(op, "y", y, nout), be.dense(op, "x", x, nin)
	if nout == 0 {
		return
	}
	be.queued(op, kc.AdaptiveAvgpool2dF32(be.g, be.grid(int64(nout)), yp, xp, int64(g.Planes),
		int32(g.H), int32(g.W), int32(g.OH), int32(g.OW)))
}

// AdaptiveAvgPool2dBack sets (adds, when acc) dx: each dy divided by its
// window's size goes to every element of its window (pool.cu's
// adaptive_avgpool2d_back_f32, one thread per input element gathering its
// windows).
func (be *Backend) AdaptiveAvgPool2dBack(dx, dy tensor.Operand, g tensor.PoolGeom, acc bool) {
	const op = "AdaptiveAvgPool2dBack"
	nin, nout := g.Planes*g.H*g.W, g.Planes*g.OH*g.OW
	dxp, dyp := be.dense(op, "dx", dx, nin), be.dense(op, "dy", dy, nout)
	if nin == 0 {
		return
	}
	be.queued(op, kc.AdaptiveAvgpool2dBackF32(be.g, be.grid(int64(nin)), dxp, dyp, int64(g.Planes),
		int32(g.H), int32(g.W), int32(g.OH), int32(g.OW), b2i(acc)))
}

package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
)

// Conv2d is a 2-d convolution over (N, C, H, W) inputs with square kernels,
// stride and zero padding, PyTorch's nn.Conv2d (groups 1, dilation 1).
// Members: weight (Out, In, K, K), bias (Out) when present.
//
// It is computed per image as a GEMM of the weight (Out x In*K*K) with the
// image's patch matrix (im2col, In*K*K x OH*OW); a 1x1 stride-1 unpadded
// convolution uses the image itself as the patch matrix.
type Conv2d struct {
	In, Out, Kernel, Stride, Padding int
	Weight                           *autograd.Var
	Bias                             *autograd.Var // nil without bias
}

// NewConv2d returns a convolution with PyTorch's default initialisation
// drawn from r.
func NewConv2d(in, out, kernel, stride, padding int, bias bool, r *rand.Rand) *Conv2d {
	if in <= 0 || out <= 0 || kernel <= 0 || stride <= 0 || padding < 0 {
		panic(fmt.Sprintf("nn.NewConv2d: bad geometry in=%d out=%d kernel=%d stride=%d padding=%d", in, out, kernel, stride, padding))
	}
	c := &Conv2d{In: in, Out: out, Kernel: kernel, Stride: stride, Padding: padding,
		Weight: autograd.Param(tensor.New(out, in, kernel, kernel), "weight")}
	var b *tensor.Tensor
	if bias {
		b = tensor.New(out)
		c.Bias = autograd.Param(b, "bias")
	}
	DefaultInit(c.Weight.Value, b, r)
	return c
}

// Members returns weight and bias.
func (c *Conv2d) Members() []Member {
	ms := []Member{{Name: "weight", Param: c.Weight}}
	if c.Bias != nil {
		ms = append(ms, Member{Name: "bias", Param: c.Bias})
	}
	return ms
}

// direct reports whether the patch matrix is the image itself.
func (c *Conv2d) direct() bool { return c.Kernel == 1 && c.Stride == 1 && c.Padding == 0 }

// Forward convolves x of shape (N, In, H, W) to (N, Out, OH, OW).
func (c *Conv2d) Forward(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	shape := x.Value.Shape()
	if len(shape) != 4 || shape[1] != c.In {
		panic(fmt.Sprintf("nn.Conv2d(%d, %d): input of shape %v, expected (N, %d, H, W)", c.In, c.Out, shape, c.In))
	}
	n, h, w := shape[0], shape[2], shape[3]
	k, s, p := c.Kernel, c.Stride, c.Padding
	oh, ow := ConvOutSize(h, k, s, p), ConvOutSize(w, k, s, p)
	if oh <= 0 || ow <= 0 {
		panic(fmt.Sprintf("nn.Conv2d: input %dx%d too small for kernel %d padding %d", h, w, k, p))
	}
	ckk, ohw, hw := c.In*k*k, oh*ow, h*w
	xd, wd := data(x), c.Weight.Value.Data()
	y := tensor.New(n, c.Out, oh, ow)
	yd := y.Data()
	var col []float32
	if !c.direct() {
		col = make([]float32, ckk*ohw)
	}
	for i := range n {
		img := xd[i*c.In*hw : (i+1)*c.In*hw]
		m := img
		if col != nil {
			im2col(col, img, c.In, h, w, k, k, s, p)
			m = col
		}
		gemm.Sgemm(false, false, c.Out, ohw, ckk, 1, wd, ckk, m, ohw, 0, yd[i*c.Out*ohw:], ohw)
	}
	inputs := []*autograd.Var{x, c.Weight}
	if c.Bias != nil {
		addChannelBias(yd, c.Bias.Value.Data(), n, c.Out, ohw)
		inputs = append(inputs, c.Bias)
	}
	return tp.Record(y, func(out *autograd.Var) {
		dy := gradOf(out)
		if c.Bias != nil {
			if db, _ := gradSlot(c.Bias); db != nil {
				sumChannels(db, dy, n, c.Out, ohw)
			}
		}
		dw, wacc := gradSlot(c.Weight)
		dx, xacc := gradSlot(x)
		var col, dcol []float32
		if !c.direct() {
			if dw != nil {
				col = make([]float32, ckk*ohw)
			}
			if dx != nil {
				dcol = make([]float32, ckk*ohw)
			}
		}
		for i := range n {
			img := xd[i*c.In*hw : (i+1)*c.In*hw]
			dyi := dy[i*c.Out*ohw : (i+1)*c.Out*ohw]
			if dw != nil {
				m := img
				if col != nil {
					im2col(col, img, c.In, h, w, k, k, s, p)
					m = col
				}
				gemm.Sgemm(false, true, c.Out, ckk, ohw, 1, dyi, ohw, m, ohw, beta(wacc || i > 0), dw, ckk)
			}
			if dx != nil {
				dxi := dx[i*c.In*hw : (i+1)*c.In*hw]
				if dcol == nil {
					gemm.Sgemm(true, false, ckk, ohw, c.Out, 1, wd, ckk, dyi, ohw, beta(xacc), dxi, ohw)
					continue
				}
				gemm.Sgemm(true, false, ckk, ohw, c.Out, 1, wd, ckk, dyi, ohw, 0, dcol, ohw)
				if !xacc {
					clear(dxi)
				}
				col2im(dxi, dcol, c.In, h, w, k, k, s, p)
			}
		}
	}, inputs...)
}

// addChannelBias adds b[ch] to every element of channel ch of an
// (n, c, s) array.
func addChannelBias(y, b []float32, n, c, s int) {
	for i := range n {
		for ch := range c {
			row := y[(i*c+ch)*s : (i*c+ch+1)*s]
			for j := range row {
				row[j] += b[ch]
			}
		}
	}
}

// sumChannels adds the per-channel sums of an (n, c, s) array into db.
func sumChannels(db, dy []float32, n, c, s int) {
	for i := range n {
		for ch := range c {
			var t float32
			for _, v := range dy[(i*c+ch)*s : (i*c+ch+1)*s] {
				t += v
			}
			db[ch] += t
		}
	}
}

package tensor

import "fmt"

// ConvOutSize returns the output size of a convolution or pooling window
// of size k over in elements with the given stride and zero padding on
// both sides: (in+2*pad-k)/stride + 1, or 0 when the window does not fit.
func ConvOutSize(in, k, stride, pad int) int {
	if stride <= 0 || k <= 0 || in < 0 || pad < 0 {
		panic(fmt.Sprintf("tensor.ConvOutSize: in=%d k=%d stride=%d pad=%d", in, k, stride, pad))
	}
	if in+2*pad < k {
		return 0
	}
	return (in+2*pad-k)/stride + 1
}

// Im2Col writes the im2col matrix of one C x H x W image src (NCHW) into
// dst: C*KH*KW rows of OH*OW columns, row (c*KH+i)*KW+j, column oy*OW+ox
// holding src[c, oy*strideH+i-padH, ox*strideW+j-padW] (0 in the padding).
// A convolution is then a GEMM of the (F, C*KH*KW) weights with dst.
func Im2Col(dst []float32, src []float32, c, h, w, kh, kw, strideH, strideW, padH, padW int) {
	g := ConvGeom{C: c, H: h, W: w, KH: kh, KW: kw, StrideH: strideH, StrideW: strideW, PadH: padH, PadW: padW}
	checkConv("Im2Col", g, len(dst), len(src))
	im2col(dst, src, g)
}

// Col2Im adds every element of the im2col matrix col (laid out as Im2Col
// writes it) into its position in the C x H x W image dst. It is the
// adjoint of Im2Col (the gradient of a convolution with respect to its
// input); dst is accumulated into, not overwritten.
func Col2Im(dst []float32, col []float32, c, h, w, kh, kw, strideH, strideW, padH, padW int) {
	g := ConvGeom{C: c, H: h, W: w, KH: kh, KW: kw, StrideH: strideH, StrideW: strideW, PadH: padH, PadW: padW}
	checkConv("Col2Im", g, len(col), len(dst))
	col2im(dst, col, g)
}

// checkConv panics unless g is a valid geometry with a column buffer of at
// least colLen and an image of at least imgLen elements.
func checkConv(op string, g ConvGeom, colLen, imgLen int) {
	if g.C < 0 || g.H < 0 || g.W < 0 || g.KH <= 0 || g.KW <= 0 || g.StrideH <= 0 || g.StrideW <= 0 || g.PadH < 0 || g.PadW < 0 {
		panic(fmt.Sprintf("tensor.%s: bad geometry %+v", op, g))
	}
	rows, cols := g.C*g.KH*g.KW, g.OutH()*g.OutW()
	if colLen < rows*cols {
		panic(fmt.Sprintf("tensor.%s: column buffer of %d elements, want %d x %d = %d", op, colLen, rows, cols, rows*cols))
	}
	if imgLen < g.C*g.H*g.W {
		panic(fmt.Sprintf("tensor.%s: image buffer of %d elements, want %d x %d x %d = %d", op, imgLen, g.C, g.H, g.W, g.C*g.H*g.W))
	}
}

package tensor

// The CPU's Backend.Im2Col and Backend.Col2Im: the core contract's
// single-image patch matrices (ConvGeom, ConvOutSize in conv.go), which
// every backend implements and the conformance tests check. Package nn's
// Conv2d does not use them: it runs through ConvBackend (convolution.go),
// whose CPU passes are kernels/conv's.

func (cpu) Im2Col(dst Buffer, dstOff int, src Buffer, srcOff int, g ConvGeom) {
	im2col(dst.Host[dstOff:], src.Host[srcOff:], g)
}

func (cpu) Col2Im(dst Buffer, dstOff int, col Buffer, colOff int, g ConvGeom) {
	col2im(dst.Host[dstOff:], col.Host[colOff:], g)
}

// validCols returns the range [lo, hi) of output columns ox whose input
// column ox*stride+k-pad lies inside [0, w).
func validCols(ow, w, k, stride, pad int) (lo, hi int) {
	if d := pad - k; d > 0 {
		lo = (d + stride - 1) / stride
	}
	if e := w - 1 + pad - k; e >= 0 {
		hi = min(ow, e/stride+1)
	}
	lo = min(lo, hi)
	return lo, hi
}

// im2col writes the C*KH*KW x OH*OW im2col matrix of the image x into dst.
func im2col(dst, x []float32, g ConvGeom) {
	oh, ow := g.OutH(), g.OutW()
	n := oh * ow
	if n == 0 {
		return
	}
	hw := g.H * g.W
	for c := 0; c < g.C; c++ {
		img := x[c*hw : c*hw+hw]
		for ki := 0; ki < g.KH; ki++ {
			for kj := 0; kj < g.KW; kj++ {
				r := (c*g.KH+ki)*g.KW + kj
				row := dst[r*n : r*n+n]
				lo, hi := validCols(ow, g.W, kj, g.StrideW, g.PadW)
				shift := kj - g.PadW
				for oy := 0; oy < oh; oy++ {
					out := row[oy*ow : oy*ow+ow]
					iy := oy*g.StrideH + ki - g.PadH
					if iy < 0 || iy >= g.H {
						clear(out)
						continue
					}
					line := img[iy*g.W : iy*g.W+g.W]
					clear(out[:lo])
					clear(out[hi:])
					if g.StrideW == 1 && lo < hi {
						copy(out[lo:hi], line[lo+shift:])
						continue
					}
					for ox := lo; ox < hi; ox++ {
						out[ox] = line[ox*g.StrideW+shift]
					}
				}
			}
		}
	}
}

// col2im adds every element of the im2col matrix col into its position in
// the image dst (the adjoint of im2col).
func col2im(dst, col []float32, g ConvGeom) {
	oh, ow := g.OutH(), g.OutW()
	n := oh * ow
	if n == 0 {
		return
	}
	hw := g.H * g.W
	for c := 0; c < g.C; c++ {
		img := dst[c*hw : c*hw+hw]
		for ki := 0; ki < g.KH; ki++ {
			for kj := 0; kj < g.KW; kj++ {
				r := (c*g.KH+ki)*g.KW + kj
				row := col[r*n : r*n+n]
				lo, hi := validCols(ow, g.W, kj, g.StrideW, g.PadW)
				shift := kj - g.PadW
				for oy := 0; oy < oh; oy++ {
					iy := oy*g.StrideH + ki - g.PadH
					if iy < 0 || iy >= g.H || lo >= hi {
						continue
					}
					in := row[oy*ow : oy*ow+ow]
					line := img[iy*g.W : iy*g.W+g.W]
					if g.StrideW == 1 {
						l := line[lo+shift : hi+shift]
						binaryVV(OpAdd, l, l, in[lo:hi])
						continue
					}
					for ox := lo; ox < hi; ox++ {
						line[ox*g.StrideW+shift] += in[ox]
					}
				}
			}
		}
	}
}

package conv

import "github.com/duel-ssl/duel/kernels/vecmath"

// im2col3x3s2 is im2col for a 3x3 kernel, stride 2 and padding 1 over
// images of even height and width (the downsampling convolutions of a
// ResNet). Every input pixel is read once: the four phases of the image
// (even/odd rows x even/odd columns) go to the rows of taps (1,1), (1,2),
// (2,1) and (2,2), and the other five taps are those rows shifted by one
// output row and/or column, copied whole. The general stride-2 path reads
// every pixel 2.25 times, one float at a time.
func im2col3x3s2(col []float32, ldcol int, src []float32, cs, c, h, w int) {
	oh, ow := h/2, w/2
	n := oh * ow
	for ci := range c {
		img := src[ci*cs : ci*cs+h*w]
		rows := col[ci*9*ldcol:]
		tap := func(t int) []float32 { return rows[t*ldcol:][:n] }
		ee, eo, oe, oo := tap(4), tap(5), tap(7), tap(8)
		for oi := range oh {
			vecmath.Unzip(ee[oi*ow:(oi+1)*ow], eo[oi*ow:(oi+1)*ow], img[2*oi*w:(2*oi+1)*w])
			vecmath.Unzip(oe[oi*ow:(oi+1)*ow], oo[oi*ow:(oi+1)*ow], img[(2*oi+1)*w:(2*oi+2)*w])
		}
		shiftCols(tap(3), eo, ow) // x[2oi][2oj-1]
		shiftCols(tap(6), oo, ow) // x[2oi+1][2oj-1]
		shiftRows(tap(1), oe, ow) // x[2oi-1][2oj]
		shiftRows(tap(2), oo, ow) // x[2oi-1][2oj+1]
		shiftBoth(tap(0), oo, ow) // x[2oi-1][2oj-1]
	}
}

// shiftCols sets dst (rows of ow) to src moved one column right, with a
// zero first column.
func shiftCols(dst, src []float32, ow int) {
	copy(dst[1:], src[:len(src)-1])
	for r := 0; r < len(dst); r += ow {
		dst[r] = 0
	}
}

// shiftRows sets dst (rows of ow) to src moved one row down, with a zero
// first row.
func shiftRows(dst, src []float32, ow int) {
	copy(dst[ow:], src[:len(src)-ow])
	clear(dst[:ow])
}

// shiftBoth sets dst (rows of ow) to src moved one row down and one column
// right, with a zero first row and column.
func shiftBoth(dst, src []float32, ow int) {
	if m := len(src) - ow - 1; m > 0 {
		copy(dst[ow+1:], src[:m])
	}
	clear(dst[:min(ow+1, len(dst))])
	for r := 0; r < len(dst); r += ow {
		dst[r] = 0
	}
}

// col2im3x3s2 is col2im for a 3x3 kernel, stride 2 and padding 1 over
// images of even height and width, the adjoint of im2col3x3s2: each pixel
// gets the sum of the (up to four) patch entries that read it in one pass,
// instead of nine strided read-modify-write passes over the image.
func col2im3x3s2(dst []float32, cs int, col []float32, ldcol, c, h, w int) {
	oh, ow := h/2, w/2
	n := oh * ow
	for ci := range c {
		img := dst[ci*cs : ci*cs+h*w]
		rows := col[ci*9*ldcol:]
		var t [9][]float32
		for k := range t {
			t[k] = rows[k*ldcol:][:n]
		}
		for oi := range oh {
			even := img[2*oi*w:][:w]
			odd := img[(2*oi+1)*w:][:w]
			r := oi * ow
			for oj := range ow {
				i := r + oj
				// Pixel (2oi, 2oj+1) is also read by tap (1,0) of output
				// (oi, oj+1); row 2oi+1 by taps (0,*) of output row oi+1.
				e0 := t[4][i]
				e1 := t[5][i]
				o0 := t[7][i]
				o1 := t[8][i]
				if oj+1 < ow {
					e1 += t[3][i+1]
					o1 += t[6][i+1]
				}
				if oi+1 < oh {
					o0 += t[1][i+ow]
					o1 += t[2][i+ow]
					if oj+1 < ow {
						o1 += t[0][i+ow+1]
					}
				}
				even[2*oj] += e0
				even[2*oj+1] += e1
				odd[2*oj] += o0
				odd[2*oj+1] += o1
			}
		}
	}
}

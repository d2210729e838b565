package conv

// ConvOutSize returns the output length of a convolution or pooling window
// of size k with the given stride and zero padding over an input of length in.
func OutSize(in, k, stride, pad int) int { return (in+2*pad-k)/stride + 1 }

// im2col writes the patches of one (c, h, w) image into col, a
// (c*kh*kw) x (oh*ow) matrix with row stride ldcol: row (ci*kh+ki)*kw+kj
// holds the input pixel under kernel tap (ki, kj) of channel ci for every
// output position, zero where the tap falls into the padding. Channel ci of
// the image is src[ci*cs : ci*cs+h*w].
func im2col(col []float32, ldcol int, src []float32, cs, c, h, w, kh, kw, stride, pad int) {
	oh, ow := OutSize(h, kh, stride, pad), OutSize(w, kw, stride, pad)
	n := oh * ow
	if stride == 1 && ow == w {
		im2colSame(col, ldcol, src, cs, c, h, w, kh, kw, pad)
		return
	}
	if stride == 2 && kh == 3 && kw == 3 && pad == 1 && h%2 == 0 && w%2 == 0 {
		im2col3x3s2(col, ldcol, src, cs, c, h, w)
		return
	}
	for ci := range c {
		img := src[ci*cs : ci*cs+h*w]
		for ki := range kh {
			for kj := range kw {
				row := col[((ci*kh+ki)*kw+kj)*ldcol:][:n]
				// Output columns whose input column is inside the image.
				jlo, jhi := validRange(ow, w, kj, stride, pad)
				if jlo >= jhi {
					clear(row)
					continue
				}
				if stride == 2 {
					im2colTap2(row, img, h, w, ow, ki-pad, jlo*2-pad+kj, jlo, jhi)
					continue
				}
				for oi := range oh {
					dst := row[oi*ow : (oi+1)*ow]
					ih := oi*stride - pad + ki
					if ih < 0 || ih >= h {
						clear(dst)
						continue
					}
					clear(dst[:jlo])
					clear(dst[jhi:])
					line := img[ih*w:]
					iw := jlo*stride - pad + kj
					if stride == 1 {
						copy(dst[jlo:jhi], line[iw:iw+jhi-jlo])
						continue
					}
					for oj := jlo; oj < jhi; oj++ {
						dst[oj] = line[iw]
						iw += stride
					}
				}
			}
		}
	}
}

// im2colTap2 writes the row of one kernel tap of a stride-2 im2col: row
// (oh x ow) gets, at output (oi, oj), the pixel (2*oi+ih0, 2*oj+iw0-2*jlo)
// of the h x w image img, for the output columns [jlo, jhi) whose input
// column is inside the image (jlo < jhi), zero elsewhere. The margins
// (0-2 elements per output row) are cleared by loops and the even pixels
// read 4 at a time: a call per output row cost more than the copying.
func im2colTap2(row, img []float32, h, w, ow, ih0, iw0, jlo, jhi int) {
	oh := len(row) / ow
	// Output rows [olo, ohi) have their input row inside the image.
	olo := min(oh, max(0, (1-ih0)/2))
	ohi := 0
	if lim := h - 1 - ih0; lim >= 0 {
		ohi = min(oh, lim/2+1)
	}
	ohi = max(ohi, olo)
	clear(row[:olo*ow])
	clear(row[ohi*ow:])
	cnt := jhi - jlo
	for oi := olo; oi < ohi; oi++ {
		dst := row[oi*ow : (oi+1)*ow]
		for q := range dst[:jlo] {
			dst[q] = 0
		}
		for q := jhi; q < len(dst); q++ {
			dst[q] = 0
		}
		d := dst[jlo:jhi]
		s := img[(2*oi+ih0)*w+iw0:][:2*cnt-1]
		for len(d) >= 4 && len(s) >= 8 {
			d[0], d[1], d[2], d[3] = s[0], s[2], s[4], s[6]
			d, s = d[4:], s[8:]
		}
		for j := range d {
			d[j] = s[2*j]
		}
	}
}

// im2colSame is im2col for stride 1 and output width = input width (the
// "same" 3x3 padding-1 convolutions of a ResNet). Each tap's row is then the
// image shifted by (ki-pad)*w + (kj-pad): one copy of the valid rows, after
// which the columns that wrapped around a row edge are zeroed.
func im2colSame(col []float32, ldcol int, src []float32, cs, c, h, w, kh, kw, pad int) {
	oh := h + 2*pad - kh + 1
	n := oh * w
	for ci := range c {
		img := src[ci*cs : ci*cs+h*w]
		for ki := range kh {
			// Output rows whose input row is inside the image.
			olo, ohi := max(0, pad-ki), min(oh, h+pad-ki)
			for kj := range kw {
				row := col[((ci*kh+ki)*kw+kj)*ldcol:][:n]
				if olo >= ohi {
					clear(row)
					continue
				}
				clear(row[:olo*w])
				clear(row[ohi*w:])
				shift := kj - pad
				dst := row[olo*w : ohi*w]
				start := (olo+ki-pad)*w + shift
				switch {
				case shift >= w || -shift >= w:
					clear(dst) // every tap of this row falls outside the image
				case shift == 0:
					copy(dst, img[start:start+len(dst)])
				case shift < 0:
					// The first -shift columns of each row fall left of
					// the image.
					copy(dst[-shift:], img[start-shift:start+len(dst)])
					for r := 0; r < len(dst); r += w {
						for q := r; q < r-shift; q++ {
							dst[q] = 0 // a call to clear costs more for 1-3 elements
						}
					}
				default:
					// The last shift columns of each row fall right of it.
					copy(dst[:len(dst)-shift], img[start:start+len(dst)-shift])
					for r := w; r <= len(dst); r += w {
						for q := r - shift; q < r; q++ {
							dst[q] = 0
						}
					}
				}
			}
		}
	}
}

// col2im adds the columns of col, laid out as im2col writes them, back into
// the (c, h, w) image dst with channel stride cs (the adjoint of im2col).
func col2im(dst []float32, cs int, col []float32, ldcol, c, h, w, kh, kw, stride, pad int) {
	if stride == 2 && kh == 3 && kw == 3 && pad == 1 && h%2 == 0 && w%2 == 0 {
		col2im3x3s2(dst, cs, col, ldcol, c, h, w)
		return
	}
	col2imGeneral(dst, cs, col, ldcol, c, h, w, kh, kw, stride, pad)
}

// col2imGeneral is col2im for any geometry, one kernel tap at a time.
func col2imGeneral(dst []float32, cs int, col []float32, ldcol, c, h, w, kh, kw, stride, pad int) {
	oh, ow := OutSize(h, kh, stride, pad), OutSize(w, kw, stride, pad)
	n := oh * ow
	for ci := range c {
		img := dst[ci*cs : ci*cs+h*w]
		for ki := range kh {
			for kj := range kw {
				row := col[((ci*kh+ki)*kw+kj)*ldcol:][:n]
				jlo, jhi := validRange(ow, w, kj, stride, pad)
				if jlo >= jhi {
					continue
				}
				for oi := range oh {
					ih := oi*stride - pad + ki
					if ih < 0 || ih >= h {
						continue
					}
					src := row[oi*ow : (oi+1)*ow]
					line := img[ih*w:]
					iw := jlo*stride - pad + kj
					if stride == 1 {
						seg := line[iw : iw+jhi-jlo]
						for j, v := range src[jlo:jhi] {
							seg[j] += v
						}
						continue
					}
					for oj := jlo; oj < jhi; oj++ {
						line[iw] += src[oj]
						iw += stride
					}
				}
			}
		}
	}
}

// validRange returns the output columns [lo, hi) whose input column
// oj*stride - pad + kj lies in [0, w).
func validRange(ow, w, kj, stride, pad int) (lo, hi int) {
	// smallest oj with oj*stride >= pad - kj
	need := pad - kj
	if need > 0 {
		lo = (need + stride - 1) / stride
	}
	// largest oj with oj*stride - pad + kj <= w-1, plus one
	lim := w - 1 + pad - kj
	if lim < 0 {
		return 0, 0
	}
	hi = min(lim/stride+1, ow)
	if lo > hi {
		lo = hi
	}
	return lo, hi
}

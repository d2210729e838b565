package conv

// WeightGrad computes the weight gradient of the 3x3 stride-1 padding-1
// convolution of a chunk of cnt images of pl's size, from out output
// channels of output gradient dy (planes ldy apart) and in input channels
// of input x (planes ldx apart):
//
//	dw[(co*in+ci)*9 + kh*3+kw] (+)= sum over p of dy[co*ldy+p] * x[ci*ldx + p + (kh-1)*W + (kw-1)]
//
// with x zero outside each image; added to dw when acc, else stored. For
// each block of up to 3 output channels and each input channel, the
// products are summed in 16 lanes over runs of whole images (at least 64
// vectors when the chunk has them), each run's lanes added up and the runs
// added in order.
func WeightGrad(pl *Plan, dw, dy []float32, ldy int, x []float32, ldx int, out, in, cnt int, acc bool) {
	if out == 0 || in == 0 {
		return
	}
	_ = dw[out*in*9-1]
	n := cnt * pl.h * pl.w
	if n == 0 {
		if !acc {
			clear(dw[:out*in*9])
		}
		return
	}
	checkPlanes("dy", dy, ldy, out, n)
	checkPlanes("x", x, ldx, in, n)
	var sums [3 * 9]float32
	for co := 0; co < out; {
		mr := min(3, out-co)
		kern := wgradKernel(mr)
		for ci := range in {
			clear(sums[:])
			xc := x[ci*ldx:]
			for i0 := 0; i0 < cnt; i0 += pl.rep {
				p0 := i0 * pl.h * pl.w
				kern(min(pl.rep, cnt-i0)*pl.vpi, &xc[p0], &dy[co*ldy+p0], ldy, pl.w, &pl.masks[0], &sums[0])
			}
			for r := range mr {
				d := dw[((co+r)*in+ci)*9:][:9]
				s := sums[r*9:][:9]
				if acc {
					for t := range d {
						d[t] += s[t]
					}
				} else {
					copy(d, s)
				}
			}
		}
		co += mr
	}
}

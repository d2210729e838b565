package conv

import "fmt"

// WeightGrad computes the weight gradient of the 3x3 padding-1 convolution
// pl of a chunk of cnt images, from out output channels of output gradient
// dy (planes ldy apart) and in input channels of input x (planes ldx
// apart; with stride 2 the chunk's phase planes, see Phases):
//
//	dw[(co*in+ci)*9 + kh*3+kw] (+)= sum over p of dy[co*ldy+p] * input(ci, p, kh, kw)
//
// (input as for Forward), added to dw when acc, else stored. For each
// block of up to 3 output channels and each input channel, the products
// are summed in 16 lanes over runs of whole images (at least 64 vectors
// when the chunk has them), each run's lanes added up and the runs added in
// order.
func WeightGrad(pl *Plan, dw, dy []float32, ldy int, x []float32, ldx int, out, in, cnt int, acc bool) {
	weightGradKernels(pl, dw, dy, ldy, x, ldx, out, in, cnt, acc, false)
}

// WeightGradBF16 is WeightGrad over word planes of bfloat16 pairs of
// images: dy and x hold cnt image pairs (gemm.PairPlanes of images 2i and
// 2i+1 of a chunk), each lane adding both images' products.
func WeightGradBF16(pl *Plan, dw, dy []float32, ldy int, x []float32, ldx int, out, in, cnt int, acc bool) {
	weightGradKernels(pl, dw, dy, ldy, x, ldx, out, in, cnt, acc, true)
}

// weightGradKernels is WeightGrad with the float32 kernels, or with bf16
// the kernels over words of bfloat16 pairs.
func weightGradKernels(pl *Plan, dw, dy []float32, ldy int, x []float32, ldx int, out, in, cnt int, acc, bf16 bool) {
	if out == 0 || in == 0 {
		return
	}
	_ = dw[out*in*9-1]
	gr := pl.fwd
	ohw := gr.oh * gr.ow
	n := cnt * ohw
	if n == 0 {
		if !acc {
			clear(dw[:out*in*9])
		}
		return
	}
	checkPlanes("dy", dy, ldy, out, n)
	if pl.stride == 2 {
		if ldx < 4*n {
			panic(fmt.Sprintf("conv.WeightGrad: ldx=%d is less than the chunk's four phase planes (%d floats)", ldx, 4*n))
		}
		checkPlanes("x", x, ldx, in, 4*n)
	} else {
		checkPlanes("x", x, ldx, in, n)
	}
	var sums [3 * 9]float32
	for co := 0; co < out; {
		mr := min(3, out-co)
		kern, kern2 := wgradKernel(mr, bf16)
		for ci := range in {
			clear(sums[:])
			xc := x[ci*ldx:]
			for i0 := 0; i0 < cnt; i0 += gr.rep {
				p0 := i0 * ohw
				nv := min(gr.rep, cnt-i0) * gr.vpi
				if pl.stride == 2 {
					kern2(nv, &xc[p0], &dy[co*ldy+p0], ldy, n, gr.ow, &gr.masks[0], &sums[0])
				} else {
					kern(nv, &xc[p0], &dy[co*ldy+p0], ldy, gr.ow, &gr.masks[0], &sums[0])
				}
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

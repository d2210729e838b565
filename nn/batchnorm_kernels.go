package nn

import (
	"math"

	"github.com/duel-ssl/duel/autograd"
)

// The BatchNorm computations: batch statistics, the normalisation (with the
// fused ReLU and residual variants) and the backward pass, each split over
// goroutines by channel or by plane.

// batchStats computes per (group, channel) mean and 1/sqrt(var+eps) with the
// biased variance, and updates the running statistics.
func (bn *BatchNorm) batchStats(xd, mean, invstd []float32, g bnGeom) {
	bmean := make([]float64, g.c)
	bvar := make([]float64, g.c)
	parallelFor(g.c, workers(len(xd)), func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			bn.channelStats(ch, xd, mean, invstd, bmean, bvar, g)
		}
	})
	bn.updateRunning(bmean, bvar)
}

// channelStats computes the mean and inverse standard deviation of every
// group of channel ch into mean and invstd, and the channel's mean and
// unbiased variance over the groups into bmean[ch] and bvar[ch].
func (bn *BatchNorm) channelStats(ch int, xd, mean, invstd []float32, bmean, bvar []float64, g bnGeom) {
	c, s := g.c, g.s
	cnt := float64(g.ng * s)
	for grp := range g.splits {
		// Two passes: the mean, then the squared deviations, each plane
		// summed in float32 and the planes in float64.
		var sum float64
		for i := grp; i < g.n; i += g.splits {
			p := g.plane(i, ch)
			sum += float64(sum8(xd[p*s : (p+1)*s]))
		}
		mu := sum / cnt
		var sq float64
		for i := grp; i < g.n; i += g.splits {
			p := g.plane(i, ch)
			sq += float64(sqDev8(xd[p*s:(p+1)*s], float32(mu)))
		}
		v := sq / cnt
		mean[grp*c+ch] = float32(mu)
		invstd[grp*c+ch] = float32(1 / math.Sqrt(v+bn.Eps))
		bmean[ch] += mu / float64(g.splits)
		bvar[ch] += v * cnt / (cnt - 1) / float64(g.splits)
	}
}

// updateRunning moves the running statistics towards the batch's and
// counts the batch.
func (bn *BatchNorm) updateRunning(bmean, bvar []float64) {
	rm, rv := bn.RunningMean.Tensor.Data(), bn.RunningVar.Tensor.Data()
	m := bn.Momentum
	for ch := range bmean {
		rm[ch] = float32((1-m)*float64(rm[ch]) + m*bmean[ch])
		rv[ch] = float32((1-m)*float64(rv[ch]) + m*bvar[ch])
	}
	bn.NumBatch.Tensor.Data()[0]++
}

// statsApply is batchStats followed by bnApply for a channel-major input,
// channel by channel: each channel's planes are contiguous there, so the
// passes of one channel read it from the cache instead of memory. The
// results are those of the separate passes, bit for bit.
func (bn *BatchNorm) statsApply(xd, yd, res, mean, invstd, gamma, beta []float32, g bnGeom, relu bool) {
	bmean := make([]float64, g.c)
	bvar := make([]float64, g.c)
	parallelFor(g.c, workers(len(xd)), func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			bn.channelStats(ch, xd, mean, invstd, bmean, bvar, g)
			applyPlanes(ch*g.n, (ch+1)*g.n, xd, yd, res, mean, invstd, gamma, beta, g, relu)
		}
	})
	bn.updateRunning(bmean, bvar)
}

// bnApply writes y = (x - mean) * invstd * gamma + beta, plus res when
// non-nil, or its positive part with relu.
func bnApply(xd, yd, res, mean, invstd, gamma, beta []float32, g bnGeom, relu bool) {
	parallelFor(g.n*g.c, workers(len(xd)), func(lo, hi int) {
		applyPlanes(lo, hi, xd, yd, res, mean, invstd, gamma, beta, g, relu)
	})
}

// applyPlanes is bnApply for the memory planes [lo, hi).
func applyPlanes(lo, hi int, xd, yd, res, mean, invstd, gamma, beta []float32, g bnGeom, relu bool) {
	s := g.s
	for p := lo; p < hi; p++ {
		i, ch := g.coords(p)
		k := (i%g.splits)*g.c + ch
		// (x - mean) * a + beta, not x*a + (beta - mean*a): the folded
		// form cancels badly when |mean| >> std.
		a, mu, b := invstd[k]*gamma[ch], mean[k], beta[ch]
		src, dst := xd[p*s:(p+1)*s], yd[p*s:(p+1)*s]
		switch {
		case res != nil && relu:
			affineAddReLU(dst, src, res[p*s:(p+1)*s], mu, a, b)
		case res != nil:
			r := res[p*s : (p+1)*s]
			for j, v := range src {
				dst[j] = (v-mu)*a + b + r[j]
			}
		case relu:
			affineReLU(dst, src, mu, a, b)
		default:
			affine(dst, src, mu, a, b)
		}
	}
}

// bnBackward adds the gradients of x, gamma and beta given dy (both in the
// layout of g). With a non-nil mask (the output of a fused ReLU), dy counts
// only where mask > 0. With a non-nil res (the residual of a fused
// BatchNorm + residual + ReLU) it first adds dy where mask > 0 into res's
// gradient. For a channel-major input the passes run channel by channel
// (each channel's planes are contiguous there and stay in the cache from
// one pass to the next), with the same results bit for bit.
func (ar *Arena) bnBackward(x, w, b, res *autograd.Var, xd, dy, mask, mean, invstd []float32, g bnGeom, training bool) {
	c := g.c
	// Per (group, channel): sum(dy) and sum(dy * xhat).
	sdy := make([]float64, g.splits*c)
	sdyx := make([]float64, g.splits*c)
	var dres []float32
	var resAcc bool
	if res != nil {
		dres, resAcc = ar.gradSlot(res)
	}
	dx, acc := ar.gradSlot(x)
	bb := bnBack{xd: xd, dy: dy, mask: mask, mean: mean, invstd: invstd, gamma: w.Value.Data(), sdy: sdy, sdyx: sdyx, g: g, training: training, dx: dx, acc: acc, dres: dres, resAcc: resAcc}
	if g.cm {
		parallelFor(c, workers(len(xd)), func(lo, hi int) {
			for ch := lo; ch < hi; ch++ {
				bb.residual(ch*g.n, (ch+1)*g.n)
				bb.sums(ch)
				ar.bnDxPlanes(&bb, ch*g.n, (ch+1)*g.n)
			}
		})
	} else {
		if dres != nil {
			parallelFor(g.n*c, workers(len(xd)), func(lo, hi int) { bb.residual(lo, hi) })
		}
		parallelFor(c, workers(len(xd)), func(lo, hi int) {
			for ch := lo; ch < hi; ch++ {
				bb.sums(ch)
			}
		})
		parallelFor(g.n*c, workers(len(xd)), func(lo, hi int) { ar.bnDxPlanes(&bb, lo, hi) })
	}
	if dw, acc := gradSlot(w); dw != nil {
		for ch := range c {
			var t float64
			for grp := range g.splits {
				t += sdyx[grp*c+ch]
			}
			if !acc {
				dw[ch] = 0
			}
			dw[ch] += float32(t)
		}
	}
	if db, acc := gradSlot(b); db != nil {
		for ch := range c {
			var t float64
			for grp := range g.splits {
				t += sdy[grp*c+ch]
			}
			if !acc {
				db[ch] = 0
			}
			db[ch] += float32(t)
		}
	}
}

// bnBack holds the operands of a BatchNorm backward pass (see bnBackward).
type bnBack struct {
	xd, dy, mask, mean, invstd, gamma []float32
	sdy, sdyx                         []float64
	g                                 bnGeom
	training                          bool
	dx                                []float32 // nil when x needs no gradient
	acc                               bool
	dres                              []float32 // nil without a residual needing a gradient
	resAcc                            bool
}

// residual adds dy where mask > 0 (everywhere without a mask) into the
// residual's gradient, for the memory planes [lo, hi).
func (bb *bnBack) residual(lo, hi int) {
	if bb.dres == nil {
		return
	}
	s := bb.g.s
	d, g := bb.dres[lo*s:hi*s], bb.dy[lo*s:hi*s]
	if bb.mask == nil {
		if !bb.resAcc {
			copy(d, g)
			return
		}
		for i, v := range g {
			d[i] += v
		}
		return
	}
	reluMask(d, g, bb.mask[lo*s:hi*s], bb.resAcc)
}

// sums computes sum(dy) and sum(dy * xhat) of every group of channel ch.
func (bb *bnBack) sums(ch int) {
	g, s := bb.g, bb.g.s
	for grp := range g.splits {
		k := grp*g.c + ch
		mu := bb.mean[k]
		var a, b float64
		for i := grp; i < g.n; i += g.splits {
			off := g.plane(i, ch) * s
			xr, gr := bb.xd[off:off+s], bb.dy[off:off+s]
			var ra, rb float32
			if bb.mask != nil {
				ra, rb = bnSumsMasked(gr, xr, bb.mask[off:off+s], mu)
			} else {
				ra, rb = bnSums(gr, xr, mu)
			}
			a += float64(ra)
			b += float64(rb)
		}
		bb.sdy[k] = a
		bb.sdyx[k] = b * float64(bb.invstd[k])
	}
}

// bnDxPlanes writes (adds, with bb.acc) the input gradient of the memory
// planes [lo, hi), whose channels' sums are done.
func (ar *Arena) bnDxPlanes(bb *bnBack, lo, hi int) {
	if bb.dx == nil {
		return
	}
	g, c, s := bb.g, bb.g.c, bb.g.s
	cnt := float32(g.ng * s)
	mask, dx, acc, training := bb.mask, bb.dx, bb.acc, bb.training
	for p := lo; p < hi; p++ {
		i, ch := g.coords(p)
		k := (i%g.splits)*c + ch
		is := bb.invstd[k]
		scale := bb.gamma[ch] * is
		off := p * s
		xr, gr, dr := bb.xd[off:off+s], bb.dy[off:off+s], dx[off:off+s]
		if mask != nil {
			// Masked copy of this plane's dy in the gradient buffer, then
			// the plain formulas on it (dr is dx's plane: with acc, the
			// old values are kept aside in the scratch row).
			mr := mask[off : off+s]
			if acc {
				row := ar.getScratch(s)
				copy(row, dr)
				reluMask(dr, gr, mr, false)
				bnDx(dr, xr, dr, row, scale, is, bb.mean[k], float32(bb.sdy[k])/cnt, float32(bb.sdyx[k])/cnt, training)
				ar.putScratch(row)
				continue
			}
			maskPositive(dr, gr, mr)
			if training {
				bnDxTrain(dr, xr, dr, scale, is, bb.mean[k], float32(bb.sdy[k])/cnt, float32(bb.sdyx[k])/cnt)
			} else {
				affine(dr, dr, 0, scale, 0)
			}
			continue
		}
		if !training && !acc {
			affine(dr, gr, 0, scale, 0) // dy * scale
			continue
		}
		if !training {
			// Running statistics are constants: dx = dy * gamma * invstd.
			for j, gv := range gr {
				v := gv * scale
				if acc {
					v += dr[j]
				}
				dr[j] = v
			}
			continue
		}
		// dx = gamma*invstd * (dy - mean(dy) - xhat * mean(dy*xhat)).
		mdy := float32(bb.sdy[k]) / cnt
		mdyx := float32(bb.sdyx[k]) / cnt
		mu := bb.mean[k]
		if acc {
			for j, gv := range gr {
				dr[j] += scale * (gv - mdy - (xr[j]-mu)*is*mdyx)
			}
			continue
		}
		bnDxTrain(dr, xr, gr, scale, is, mu, mdy, mdyx)
	}
}

// bnDx writes one plane of the input gradient: dx = scale*dy with running
// statistics, scale*(dy - mdy - xhat*mdyx) with batch statistics, plus old
// when it is non-nil. dx may alias dy.
func bnDx(dx, x, dy, old []float32, scale, is, mu, mdy, mdyx float32, training bool) {
	x, dy = x[:len(dx)], dy[:len(dx)]
	for j := range dx {
		var v float32
		if training {
			v = scale * (dy[j] - mdy - (x[j]-mu)*is*mdyx)
		} else {
			v = scale * dy[j]
		}
		if old != nil {
			v += old[j]
		}
		dx[j] = v
	}
}

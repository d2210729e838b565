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
	c, s := g.c, g.s
	cnt := float64(g.ng * s)
	rm, rv := bn.RunningMean.Tensor.Data(), bn.RunningVar.Tensor.Data()
	m := bn.Momentum
	bmean := make([]float64, c)
	bvar := make([]float64, c)
	parallelFor(c, workers(len(xd)), func(lo, hi int) {
		for grp := range g.splits {
			for ch := lo; ch < hi; ch++ {
				// Two passes: the mean, then the squared deviations, each
				// plane summed in float32 and the planes in float64.
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
	})
	for ch := range c {
		rm[ch] = float32((1-m)*float64(rm[ch]) + m*bmean[ch])
		rv[ch] = float32((1-m)*float64(rv[ch]) + m*bvar[ch])
	}
	bn.NumBatch.Tensor.Data()[0]++
}

// bnApply writes y = (x - mean) * invstd * gamma + beta, plus res when
// non-nil, or its positive part with relu.
func bnApply(xd, yd, res, mean, invstd, gamma, beta []float32, g bnGeom, relu bool) {
	s := g.s
	parallelFor(g.n*g.c, workers(len(xd)), func(lo, hi int) {
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
	})
}

// bnBackward adds the gradients of x, gamma and beta given dy (both in the
// layout of g). With a non-nil mask (the output of a fused ReLU), dy counts
// only where mask > 0.
func (ar *Arena) bnBackward(x, w, b *autograd.Var, xd, dy, mask, mean, invstd []float32, g bnGeom, training bool) {
	c, s := g.c, g.s
	gamma := w.Value.Data()
	// Per (group, channel): sum(dy) and sum(dy * xhat).
	sdy := make([]float64, g.splits*c)
	sdyx := make([]float64, g.splits*c)
	parallelFor(c, workers(len(xd)), func(lo, hi int) {
		for grp := range g.splits {
			for ch := lo; ch < hi; ch++ {
				k := grp*c + ch
				mu := mean[k]
				var a, bb float64
				for i := grp; i < g.n; i += g.splits {
					off := g.plane(i, ch) * s
					xr, gr := xd[off:off+s], dy[off:off+s]
					var ra, rb float32
					if mask != nil {
						ra, rb = bnSumsMasked(gr, xr, mask[off:off+s], mu)
					} else {
						ra, rb = bnSums(gr, xr, mu)
					}
					a += float64(ra)
					bb += float64(rb)
				}
				sdy[k] = a
				sdyx[k] = bb * float64(invstd[k])
			}
		}
	})
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
	dx, acc := ar.gradSlot(x)
	if dx == nil {
		return
	}
	cnt := float32(g.ng * s)
	parallelFor(g.n*c, workers(len(xd)), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			i, ch := g.coords(p)
			k := (i%g.splits)*c + ch
			is := invstd[k]
			scale := gamma[ch] * is
			off := p * s
			xr, gr, dr := xd[off:off+s], dy[off:off+s], dx[off:off+s]
			if mask != nil {
				// Masked copy of this plane's dy in the gradient buffer, then
				// the plain formulas on it (dr is dx's plane: with acc, the
				// old values are kept aside in the scratch row).
				mr := mask[off : off+s]
				if acc {
					row := ar.getScratch(s)
					copy(row, dr)
					reluMask(dr, gr, mr, false)
					bnDx(dr, xr, dr, row, scale, is, mean[k], float32(sdy[k])/cnt, float32(sdyx[k])/cnt, training)
					ar.putScratch(row)
					continue
				}
				maskPositive(dr, gr, mr)
				if training {
					bnDxTrain(dr, xr, dr, scale, is, mean[k], float32(sdy[k])/cnt, float32(sdyx[k])/cnt)
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
			mdy := float32(sdy[k]) / cnt
			mdyx := float32(sdyx[k]) / cnt
			mu := mean[k]
			if acc {
				for j, gv := range gr {
					dr[j] += scale * (gv - mdy - (xr[j]-mu)*is*mdyx)
				}
				continue
			}
			bnDxTrain(dr, xr, gr, scale, is, mu, mdy, mdyx)
		}
	})
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

// Package batchnorm holds the passes of batch normalisation over float32
// activations: the statistics of each channel, the normalisation (with the
// fused ReLU and residual variants) and the backward pass, each split over
// goroutines by channel or by plane, and the elementwise loops they run
// (loops.go: AVX2 assembly bit-identical to its plain-Go reference, which
// runs under DUEL_ISA=generic or the noasm build tag).
//
// # Layout
//
// An activation of shape (N, C, ...) is N*C planes of S elements, stored
// sample-major (NCHW: plane i*C+ch holds sample i, channel ch) or
// channel-major (CNHW: plane ch*N+i). A split ("ghost") BatchNorm cuts the
// batch into Splits groups, sample i going to group i mod Splits, each
// normalised with its own statistics; its statistics are indexed by
// grp*C+ch.
//
// # Determinism
//
// Each plane is summed in float32 in the 8-lane order of the loops, the
// planes of a channel in float64, in an order fixed by the shape: the
// results do not depend on the number of goroutines.
package batchnorm

import (
	"math"
	"unsafe"

	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/internal/scratch"
	"github.com/duel-ssl/duel/kernels/vecmath"
)

// Geom describes an (N, C, ...) activation of S elements per (sample,
// channel) plane, normalised in Splits groups (1 for a plain BatchNorm;
// N must be a multiple), stored sample-major or channel-major.
type Geom struct {
	N, C, S, Splits int
	ChannelMajor    bool
}

// ng returns the samples per group.
func (g Geom) ng() int { return g.N / g.Splits }

// plane returns the memory index of the S-element plane of (sample i,
// channel ch).
func (g Geom) plane(i, ch int) int {
	if g.ChannelMajor {
		return ch*g.N + i
	}
	return i*g.C + ch
}

// coords returns the sample and channel of memory plane p.
func (g Geom) coords(p int) (i, ch int) {
	if g.ChannelMajor {
		return p % g.N, p / g.N
	}
	return p / g.C, p % g.C
}

// Scratch hands out short-lived buffers with arbitrary contents (Get
// returns n floats, Put takes them back once the caller is done); a nil
// Scratch allocates.
type Scratch = scratch.Pool

func get(sc Scratch, n int) []float32 { return scratch.Get(sc, n) }

func put(sc Scratch, b []float32) { scratch.Put(sc, b) }

// Stats computes, for every group and channel k = grp*C+ch, the mean and
// 1/sqrt(var+eps) of x (biased variance) into mean[k] and invstd[k], and
// for every channel the mean over the groups of their means and of their
// unbiased variances into bmean[ch] and bvar[ch]: what the running
// statistics move towards.
func Stats(g Geom, eps float64, x, mean, invstd []float32, bmean, bvar []float64) {
	par.For(g.C, par.Workers(len(x)), func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			channelStats(ch, g, eps, x, mean, invstd, bmean, bvar)
		}
	})
}

// channelStats is Stats for channel ch.
func channelStats(ch int, g Geom, eps float64, xd, mean, invstd []float32, bmean, bvar []float64) {
	c, s := g.C, g.S
	cnt := float64(g.ng() * s)
	bmean[ch], bvar[ch] = 0, 0
	for grp := range g.Splits {
		// Two passes: the mean, then the squared deviations, each plane
		// summed in float32 and the planes in float64.
		var sum float64
		for i := grp; i < g.N; i += g.Splits {
			p := g.plane(i, ch)
			sum += float64(vecmath.Sum(xd[p*s : (p+1)*s]))
		}
		mu := sum / cnt
		var sq float64
		for i := grp; i < g.N; i += g.Splits {
			p := g.plane(i, ch)
			sq += float64(sqDev8(xd[p*s:(p+1)*s], float32(mu)))
		}
		v := sq / cnt
		mean[grp*c+ch] = float32(mu)
		invstd[grp*c+ch] = float32(1 / math.Sqrt(v+eps))
		bmean[ch] += mu / float64(g.Splits)
		bvar[ch] += v * cnt / (cnt - 1) / float64(g.Splits)
	}
}

// Normalize writes y = (x - mean) * invstd * gamma + beta with the
// statistics of each sample's group and channel, plus res when non-nil,
// or the positive part of that with relu. res and y have x's layout.
func Normalize(g Geom, x, y, res, mean, invstd, gamma, beta []float32, relu bool) {
	par.For(g.N*g.C, par.Workers(len(x)), func(lo, hi int) {
		normalizePlanes(lo, hi, g, x, y, res, mean, invstd, gamma, beta, relu)
	})
}

// StatsNormalize is Stats followed by Normalize for a channel-major
// activation, channel by channel: each channel's planes are contiguous
// there, so the passes of one channel read it from the cache instead of
// memory. The results are those of the separate calls, bit for bit.
func StatsNormalize(g Geom, eps float64, x, y, res, mean, invstd, gamma, beta []float32, bmean, bvar []float64, relu bool) {
	if !g.ChannelMajor {
		panic("batchnorm.StatsNormalize: the activation is not channel-major")
	}
	par.For(g.C, par.Workers(len(x)), func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			channelStats(ch, g, eps, x, mean, invstd, bmean, bvar)
			normalizePlanes(ch*g.N, (ch+1)*g.N, g, x, y, res, mean, invstd, gamma, beta, relu)
		}
	})
}

// normalizePlanes is Normalize for the memory planes [lo, hi).
func normalizePlanes(lo, hi int, g Geom, xd, yd, res, mean, invstd, gamma, beta []float32, relu bool) {
	s := g.S
	for p := lo; p < hi; p++ {
		i, ch := g.coords(p)
		k := (i%g.Splits)*g.C + ch
		// (x - mean) * a + beta, not x*a + (beta - mean*a): the folded
		// form cancels badly when |mean| >> std.
		a, mu, b := invstd[k]*gamma[ch], mean[k], beta[ch]
		src, dst := xd[p*s:(p+1)*s], yd[p*s:(p+1)*s]
		switch {
		case res != nil && relu:
			vecmath.AffineAddReLU(dst, src, res[p*s:(p+1)*s], mu, a, b)
		case res != nil:
			r := res[p*s : (p+1)*s]
			for j, v := range src {
				dst[j] = (v-mu)*a + b + r[j]
			}
		case relu:
			vecmath.AffineReLU(dst, src, mu, a, b)
		default:
			vecmath.Affine(dst, src, mu, a, b)
		}
	}
}

// Grad holds the operands of Backward, every activation-shaped slice in
// the layout of the Geom.
type Grad struct {
	// X is the input, DY the gradient of the output.
	X, DY []float32
	// Mask is the output of a fused ReLU (dy counts only where Mask > 0),
	// or nil.
	Mask []float32
	// Mean and InvStd are the statistics the forward pass used (per group
	// and channel), Gamma the weight.
	Mean, InvStd, Gamma []float32
	// Training selects batch statistics; false: running statistics,
	// constants of the backward pass.
	Training bool

	// The gradients to write (add into, with their Acc flag): of the
	// input, of the residual of a fused BatchNorm + residual + ReLU (dy
	// where Mask > 0), of the weight and of the bias. A nil one is not
	// computed.
	DX, DRes, DGamma, DBeta             []float32
	AccDX, AccDRes, AccDGamma, AccDBeta bool
}

// Backward computes the gradients of a. For a channel-major activation
// the passes run channel by channel (each channel's planes are contiguous
// there and stay in the cache from one pass to the next), with the same
// results bit for bit as the separate passes of the sample-major case.
func Backward(sc Scratch, g Geom, a *Grad) {
	c := g.C
	// Per (group, channel): sum(dy) and sum(dy * xhat).
	sdy := make([]float64, g.Splits*c)
	sdyx := make([]float64, g.Splits*c)
	bb := back{Grad: a, sdy: sdy, sdyx: sdyx, g: g}
	if a.Mask != nil && a.DRes != nil && !a.AccDRes && !sliceOverlap(a.DRes, a.X) {
		// The residual pass writes the masked dy: the later passes read it
		// instead of dy and the mask (the same values, so the same bits).
		bb.maskedDY = a.DRes
	}
	w := par.Workers(len(a.X))
	if g.ChannelMajor {
		par.For(c, w, func(lo, hi int) {
			for ch := lo; ch < hi; ch++ {
				bb.residual(ch*g.N, (ch+1)*g.N)
				bb.sums(ch)
				bb.dxPlanes(sc, ch*g.N, (ch+1)*g.N)
			}
		})
	} else {
		if a.DRes != nil {
			par.For(g.N*c, w, func(lo, hi int) { bb.residual(lo, hi) })
		}
		par.For(c, w, func(lo, hi int) {
			for ch := lo; ch < hi; ch++ {
				bb.sums(ch)
			}
		})
		par.For(g.N*c, w, func(lo, hi int) { bb.dxPlanes(sc, lo, hi) })
	}
	for _, d := range []struct {
		dst  []float32
		acc  bool
		sums []float64
	}{{a.DGamma, a.AccDGamma, sdyx}, {a.DBeta, a.AccDBeta, sdy}} {
		if d.dst == nil {
			continue
		}
		for ch := range c {
			var t float64
			for grp := range g.Splits {
				t += d.sums[grp*c+ch]
			}
			if !d.acc {
				d.dst[ch] = 0
			}
			d.dst[ch] += float32(t)
		}
	}
}

// back is a Backward pass under way.
type back struct {
	*Grad
	sdy, sdyx []float64
	g         Geom
	// maskedDY is dy where Mask > 0 and +0 elsewhere, once the residual
	// pass of the planes has written it (DRes), or nil.
	maskedDY []float32
}

// sliceOverlap reports whether a and b share memory.
func sliceOverlap(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(4*len(b)) && b0 < a0+uintptr(4*len(a))
}

// residual adds dy where mask > 0 (everywhere without a mask) into the
// residual's gradient, for the memory planes [lo, hi).
func (bb *back) residual(lo, hi int) {
	if bb.DRes == nil {
		return
	}
	s := bb.g.S
	d, g := bb.DRes[lo*s:hi*s], bb.DY[lo*s:hi*s]
	if bb.Mask == nil {
		if !bb.AccDRes {
			copy(d, g)
			return
		}
		for i, v := range g {
			d[i] += v
		}
		return
	}
	vecmath.ReLUGrad(d, g, bb.Mask[lo*s:hi*s], bb.AccDRes)
}

// sums computes sum(dy) and sum(dy * xhat) of every group of channel ch.
func (bb *back) sums(ch int) {
	g, s := bb.g, bb.g.S
	for grp := range g.Splits {
		k := grp*g.C + ch
		mu := bb.Mean[k]
		var a, b float64
		for i := grp; i < g.N; i += g.Splits {
			off := g.plane(i, ch) * s
			xr, gr := bb.X[off:off+s], bb.DY[off:off+s]
			var ra, rb float32
			if bb.maskedDY != nil {
				ra, rb = bnSums(bb.maskedDY[off:off+s], xr, mu)
			} else if bb.Mask != nil {
				ra, rb = bnSumsMasked(gr, xr, bb.Mask[off:off+s], mu)
			} else {
				ra, rb = bnSums(gr, xr, mu)
			}
			a += float64(ra)
			b += float64(rb)
		}
		bb.sdy[k] = a
		bb.sdyx[k] = b * float64(bb.InvStd[k])
	}
}

// dxPlanes writes (adds, with AccDX) the input gradient of the memory
// planes [lo, hi), whose channels' sums are done.
func (bb *back) dxPlanes(sc Scratch, lo, hi int) {
	if bb.DX == nil {
		return
	}
	g, c, s := bb.g, bb.g.C, bb.g.S
	cnt := float32(g.ng() * s)
	mask, dx, acc, training := bb.Mask, bb.DX, bb.AccDX, bb.Training
	for p := lo; p < hi; p++ {
		i, ch := g.coords(p)
		k := (i%g.Splits)*c + ch
		is := bb.InvStd[k]
		scale := bb.Gamma[ch] * is
		off := p * s
		xr, gr, dr := bb.X[off:off+s], bb.DY[off:off+s], dx[off:off+s]
		if mask != nil {
			// Masked copy of this plane's dy in the gradient buffer, then
			// the plain formulas on it (dr is dx's plane: with acc, the
			// old values are kept aside in the scratch row).
			mr := mask[off : off+s]
			if acc {
				row := get(sc, s)
				copy(row, dr)
				vecmath.ReLUGrad(dr, gr, mr, false)
				bnDx(dr, xr, dr, row, scale, is, bb.Mean[k], float32(bb.sdy[k])/cnt, float32(bb.sdyx[k])/cnt, training)
				put(sc, row)
				continue
			}
			if training {
				mdy, mdyx := float32(bb.sdy[k])/cnt, float32(bb.sdyx[k])/cnt
				if bb.maskedDY != nil {
					bnDxTrain(dr, xr, bb.maskedDY[off:off+s], scale, is, bb.Mean[k], mdy, mdyx)
				} else {
					bnDxTrainMasked(dr, xr, gr, mr, scale, is, bb.Mean[k], mdy, mdyx)
				}
				continue
			}
			vecmath.MaskPositive(dr, gr, mr)
			vecmath.Affine(dr, dr, 0, scale, 0)
			continue
		}
		if !training && !acc {
			vecmath.Affine(dr, gr, 0, scale, 0) // dy * scale
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
		mu := bb.Mean[k]
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

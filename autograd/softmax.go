package autograd

import (
	"math"

	"github.com/duel-ssl/duel/tensor"
)

// LogSoftmax returns log-probabilities along axis, computed stably by
// subtracting the maximum.
//
//	yₖ = xₖ - m - ln Σⱼ exp(xⱼ - m),  m = maxⱼ xⱼ
//	∂L/∂xₖ = gₖ - exp(yₖ)·Σⱼ gⱼ
func LogSoftmax(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("LogSoftmax", axis, x.Value.NDim())
	shape := x.Shape()
	xd := x.Value.Contiguous().Data()
	y := tensor.New(shape...)
	yd := y.Data()
	forEachLane(shape, ax, func(base, n, stride int) {
		m := laneMax(xd, base, n, stride)
		var s float64
		for k := range n {
			s += math.Exp(float64(xd[base+k*stride] - m))
		}
		lse := m + float32(math.Log(s))
		for k := range n {
			i := base + k*stride
			yd[i] = xd[i] - lse
		}
	})
	return tp.Record(y, func(out *Var) {
		g := out.Grad.Data()
		dx, d := newLike(x)
		forEachLane(shape, ax, func(base, n, stride int) {
			var sg float64
			for k := range n {
				sg += float64(g[base+k*stride])
			}
			for k := range n {
				i := base + k*stride
				d[i] = g[i] - float32(math.Exp(float64(yd[i]))*sg)
			}
		})
		AccumulateGradOwned(x, dx)
	}, x)
}

// Softmax returns probabilities along axis, computed stably by subtracting
// the maximum.
//
//	yₖ = exp(xₖ - m) / Σⱼ exp(xⱼ - m),  m = maxⱼ xⱼ
//	∂L/∂xₖ = yₖ·(gₖ - Σⱼ gⱼ·yⱼ)
func Softmax(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("Softmax", axis, x.Value.NDim())
	shape := x.Shape()
	xd := x.Value.Contiguous().Data()
	y := tensor.New(shape...)
	yd := y.Data()
	forEachLane(shape, ax, func(base, n, stride int) {
		m := laneMax(xd, base, n, stride)
		var s float64
		for k := range n {
			i := base + k*stride
			e := math.Exp(float64(xd[i] - m))
			yd[i] = float32(e)
			s += e
		}
		inv := float32(1 / s)
		for k := range n {
			yd[base+k*stride] *= inv
		}
	})
	return tp.Record(y, func(out *Var) {
		g := out.Grad.Data()
		dx, d := newLike(x)
		forEachLane(shape, ax, func(base, n, stride int) {
			var sgy float64
			for k := range n {
				i := base + k*stride
				sgy += float64(g[i]) * float64(yd[i])
			}
			for k := range n {
				i := base + k*stride
				d[i] = yd[i] * (g[i] - float32(sgy))
			}
		})
		AccumulateGradOwned(x, dx)
	}, x)
}

// forEachLane calls f for every 1-d lane of a contiguous tensor of shape
// along axis: the lane's elements are at base + k*stride for k < n.
func forEachLane(shape []int, axis int, f func(base, n, stride int)) {
	outer, n, inner := splitAxis(shape, axis)
	for o := range outer {
		for j := range inner {
			f(o*n*inner+j, n, inner)
		}
	}
}

// laneMax returns the largest element of a lane (-Inf for an empty lane).
func laneMax(d []float32, base, n, stride int) float32 {
	m := float32(math.Inf(-1))
	for k := range n {
		if v := d[base+k*stride]; v > m {
			m = v
		}
	}
	return m
}

package autograd

import (
	"math"

	"github.com/duel-ssl/duel/kernels/vecmath"
	"github.com/duel-ssl/duel/tensor"
)

// LogSoftmax returns log-probabilities along axis, computed stably by
// subtracting the maximum.
//
//	yₖ = xₖ - m - ln Σⱼ exp(xⱼ - m),  m = maxⱼ xⱼ
//	∂L/∂xₖ = gₖ - softmax(x)ₖ·Σⱼ gⱼ
//
// When recording, the probabilities softmax(x) are kept for the backward
// pass (one more tensor of x's size) so that it computes no exponential.
func LogSoftmax(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("LogSoftmax", axis, x.Value.NDim())
	shape := x.Shape()
	y := tensor.New(shape...)
	if !tp.Recording(x) {
		forLanes(shape, ax, logSoftmaxLane, y.Data(), x.Value.Contiguous().Data(), nil, false)
		return Const(y)
	}
	p := tensor.New(shape...)
	forLanes(shape, ax, func(lane int, p, x, y []float32) {
		logSoftmaxLane(lane, y, x, p)
	}, p.Data(), x.Value.Contiguous().Data(), y.Data(), true)
	return tp.Record(y, func(out *Var) {
		dx, d := newLike(x)
		forLanes(shape, ax, logSoftmaxBackLane, d, out.Grad.Data(), p.Data(), false)
		AccumulateGradOwned(x, dx)
	}, x)
}

// logSoftmaxLane sets y = log softmax(x) and, when p is not nil,
// p = softmax(x).
func logSoftmaxLane(_ int, y, x, p []float32) {
	m := laneMax(x)
	e := y // scratch for the exponentials when p is not wanted
	if p != nil {
		e = p
	}
	s := vecmath.ExpShift(e, x, m)
	lse := m + float32(math.Log(s))
	y = y[:len(x)]
	if p == nil {
		for i, v := range x {
			y[i] = v - lse
		}
		return
	}
	inv := float32(1 / s)
	p = p[:len(x)]
	for i, v := range x {
		y[i] = v - lse
		p[i] *= inv
	}
}

// logSoftmaxBackLane sets dx = g - p·Σg.
func logSoftmaxBackLane(_ int, dx, g, p []float32) {
	var sg float64
	for _, v := range g {
		sg += float64(v)
	}
	s := float32(sg)
	p = p[:len(g)]
	dx = dx[:len(g)]
	for i, v := range g {
		dx[i] = v - p[i]*s
	}
}

// Softmax returns probabilities along axis, computed stably by subtracting
// the maximum.
//
//	yₖ = exp(xₖ - m) / Σⱼ exp(xⱼ - m),  m = maxⱼ xⱼ
//	∂L/∂xₖ = yₖ·(gₖ - Σⱼ gⱼ·yⱼ)
func Softmax(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("Softmax", axis, x.Value.NDim())
	shape := x.Shape()
	y := tensor.New(shape...)
	forLanes(shape, ax, softmaxLane, y.Data(), x.Value.Contiguous().Data(), nil, false)
	return tp.Record(y, func(out *Var) {
		dx, d := newLike(x)
		forLanes(shape, ax, softmaxBackLane, d, out.Grad.Data(), out.Value.Data(), false)
		AccumulateGradOwned(x, dx)
	}, x)
}

func softmaxLane(_ int, y, x, _ []float32) {
	m := laneMax(x)
	y = y[:len(x)]
	inv := float32(1 / vecmath.ExpShift(y, x, m))
	for i := range y {
		y[i] *= inv
	}
}

func softmaxBackLane(_ int, dx, g, y []float32) {
	y = y[:len(g)]
	var sgy float64
	for i, v := range g {
		sgy += float64(v) * float64(y[i])
	}
	s := float32(sgy)
	for i, v := range g {
		dx[i] = y[i] * (v - s)
	}
}

// laneMax returns the largest element (-Inf for an empty lane).
func laneMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

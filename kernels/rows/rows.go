package rows

import (
	"math"

	"github.com/duel-ssl/duel/kernels/vecmath"
)

// LaneMax returns the largest element (-Inf for an empty lane).
func LaneMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// Softmax sets y = softmax(x) along axis: exp(x - max) / Σ exp(x - max),
// the sum in float64 and its inverse rounded once.
func Softmax(shape []int, axis int, y, x []float32) {
	forLanes(shape, axis, softmaxLane, y, x, nil, false)
}

func softmaxLane(_ int, y, x, _ []float32) {
	m := LaneMax(x)
	y = y[:len(x)]
	inv := float32(1 / vecmath.ExpShift(y, x, m))
	for i := range y {
		y[i] *= inv
	}
}

// SoftmaxBack sets dx = y·(g - Σ g·y) along axis, the sum in float64.
func SoftmaxBack(shape []int, axis int, dx, g, y []float32) {
	forLanes(shape, axis, softmaxBackLane, dx, g, y, false)
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

// LogSoftmax sets y = log softmax(x) along axis and, when p is not nil,
// p = softmax(x) (kept for the backward pass).
func LogSoftmax(shape []int, axis int, y, p, x []float32) {
	if p == nil {
		forLanes(shape, axis, logSoftmaxLane, y, x, nil, false)
		return
	}
	forLanes(shape, axis, func(lane int, p, x, y []float32) {
		logSoftmaxLane(lane, y, x, p)
	}, p, x, y, true)
}

// logSoftmaxLane sets y = log softmax(x) and, when p is not nil,
// p = softmax(x).
func logSoftmaxLane(_ int, y, x, p []float32) {
	m := LaneMax(x)
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

// LogSoftmaxBack sets dx = g - p·Σg along axis, the sum in float64.
func LogSoftmaxBack(shape []int, axis int, dx, g, p []float32) {
	forLanes(shape, axis, logSoftmaxBackLane, dx, g, p, false)
}

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

// laneNorm returns max(‖x‖₂, eps), the sum of squares in float64.
func laneNorm(x []float32, eps float64) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Max(math.Sqrt(s), eps)
}

// L2Normalize sets y = x / max(‖x‖₂, eps) along axis, in float64 per
// element rounded once.
func L2Normalize(shape []int, axis int, y, x []float32, eps float64) {
	forLanes(shape, axis, func(_ int, y, x, _ []float32) {
		d := laneNorm(x, eps)
		y = y[:len(x)]
		for i, v := range x {
			y[i] = float32(float64(v) / d)
		}
	}, y, x, nil, false)
}

// stridedNorm returns max(‖x‖₂, eps) of the n elements x[0], x[stride],
// …, summed in laneNorm's order.
func stridedNorm(x []float32, n, stride int, eps float64) float64 {
	var s float64
	for i := range n {
		v := float64(x[i*stride])
		s += v * v
	}
	return math.Max(math.Sqrt(s), eps)
}

// L2NormalizeBack sets dx = (g - y·Σ g·y) / d along axis, where
// d = max(‖x‖₂, eps) is recomputed from x as L2Normalize computed it, and
// dx = g / eps where the norm is at most eps.
func L2NormalizeBack(shape []int, axis int, dx, g, x, y []float32, eps float64) {
	_, size, inner := SplitAxis(shape, axis)
	forLanes(shape, axis, func(lane int, dx, g, y []float32) {
		n := stridedNorm(x[(lane/inner)*size*inner+lane%inner:], size, inner, eps)
		y = y[:len(g)]
		var sgy float64
		if n > eps {
			for i, v := range g {
				sgy += float64(v) * float64(y[i])
			}
		}
		inv := 1 / n
		for i, v := range g {
			dx[i] = float32((float64(v) - float64(y[i])*sgy) * inv)
		}
	}, dx, g, y, false)
}

// CrossEntropy returns the mean over the n rows of the n×c logits x of
// ln Σⱼ exp(xᵢⱼ) - xᵢ,ₜᵢ, in float64 (NaN for n = 0), and, when p is not
// nil, sets p to the rows' softmax.
func CrossEntropy(n, c int, p, x []float32, targets []int) float64 {
	nll := make([]float64, n)
	ParallelFor(n, n*c, func(lo, hi int) {
		var e []float32
		if p == nil {
			e = make([]float32, c)
		}
		for i := lo; i < hi; i++ {
			xr := x[i*c : (i+1)*c]
			if p != nil {
				e = p[i*c : (i+1)*c]
			}
			m := LaneMax(xr)
			s := vecmath.ExpShift(e, xr, m)
			nll[i] = float64(m) + math.Log(s) - float64(xr[targets[i]])
			if p != nil {
				inv := float32(1 / s)
				for j := range e {
					e[j] *= inv
				}
			}
		}
	})
	var sum float64
	for _, v := range nll {
		sum += v
	}
	return sum / float64(n)
}

// CrossEntropyBack turns the n×c probabilities p into the gradient of the
// mean cross-entropy in place: pᵢⱼ = (pᵢⱼ - [j = tᵢ])·scale, where scale
// is the output's gradient divided by n.
func CrossEntropyBack(n, c int, p []float32, targets []int, scale float32) {
	ParallelFor(n, n*c, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := p[i*c : (i+1)*c]
			row[targets[i]]--
			for j := range row {
				row[j] *= scale
			}
		}
	})
}

package autograd

import (
	"math"

	"github.com/duel-ssl/duel/tensor"
)

// L2NormEps is the lower bound on the norm in L2Normalize (PyTorch's
// F.normalize default).
const L2NormEps = 1e-12

// L2Normalize divides x by its Euclidean norm along axis, with the norm
// bounded below by L2NormEps (F.normalize semantics).
//
//	yₖ = xₖ / d,  d = max(‖x‖₂, ε)
//	∂L/∂xₖ = (gₖ - yₖ·Σⱼ gⱼyⱼ) / d   when ‖x‖₂ > ε,  gₖ / ε otherwise
func L2Normalize(tp *Tape, x *Var, axis int) *Var {
	ax := normAxis("L2Normalize", axis, x.Value.NDim())
	shape := x.Shape()
	outer, _, inner := splitAxis(shape, ax)
	norms := make([]float64, outer*inner) // d per lane
	y := tensor.New(shape...)
	forLanes(shape, ax, func(lane int, y, x, _ []float32) {
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		d := math.Max(math.Sqrt(s), L2NormEps)
		norms[lane] = d
		y = y[:len(x)]
		for i, v := range x {
			y[i] = float32(float64(v) / d)
		}
	}, y.Data(), x.Value.Contiguous().Data(), nil, false)
	return tp.Record(y, func(out *Var) {
		dx, d := newLike(x)
		forLanes(shape, ax, func(lane int, dx, g, y []float32) {
			n := norms[lane]
			y = y[:len(g)]
			var sgy float64
			if n > L2NormEps {
				for i, v := range g {
					sgy += float64(v) * float64(y[i])
				}
			}
			inv := 1 / n
			for i, v := range g {
				dx[i] = float32((float64(v) - float64(y[i])*sgy) * inv)
			}
		}, d, out.Grad.Data(), out.Value.Data(), false)
		AccumulateGradOwned(x, dx)
	}, x)
}

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
	xd := x.Value.Contiguous().Data()
	y := tensor.New(shape...)
	yd := y.Data()
	outer, _, inner := splitAxis(shape, ax)
	norms := make([]float64, 0, outer*inner) // d per lane, in lane order
	forEachLane(shape, ax, func(base, n, stride int) {
		var s float64
		for k := range n {
			v := float64(xd[base+k*stride])
			s += v * v
		}
		d := math.Max(math.Sqrt(s), L2NormEps)
		norms = append(norms, d)
		inv := 1 / d
		for k := range n {
			i := base + k*stride
			yd[i] = float32(float64(xd[i]) * inv)
		}
	})
	return tp.Record(y, func(out *Var) {
		g := out.Grad.Data()
		dx, dd := newLike(x)
		lane := 0
		forEachLane(shape, ax, func(base, n, stride int) {
			d := norms[lane]
			lane++
			var sgy float64
			if d > L2NormEps {
				for k := range n {
					i := base + k*stride
					sgy += float64(g[i]) * float64(yd[i])
				}
			}
			inv := 1 / d
			for k := range n {
				i := base + k*stride
				dd[i] = float32((float64(g[i]) - float64(yd[i])*sgy) * inv)
			}
		})
		AccumulateGradOwned(x, dx)
	}, x)
}

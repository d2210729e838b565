package optim

import (
	"math"

	"github.com/duel-ssl/duel/tensor"
)

// The steps of one parameter, on the parameter's device. Each runs the
// backend's fused step when it implements tensor.OptimizerBackend (the CPU
// backend does, with float64 arithmetic per element rounded once) and
// otherwise composes the same update from core Backend operations (scale,
// add-scaled, square, sqrt, divide, sum), each rounded to float32: the
// generic fallback agrees with the fused step to a few float32 roundings of
// the values involved, not bit for bit, except the EMA, whose fallback does
// the fused loop's float32 operations in the same order.

// fused returns the fused capability of t's backend, or nil.
func fused(t *tensor.Tensor) tensor.OptimizerBackend {
	ob, _ := t.Backend().(tensor.OptimizerBackend)
	return ob
}

// operand returns t's operand, or the zero Operand for a nil tensor (the
// momentum buffer of a step without momentum).
func operand(t *tensor.Tensor) tensor.Operand {
	if t == nil {
		return tensor.Operand{}
	}
	return t.Operand()
}

// sgdStep applies one SGD step to w with gradient g and momentum buffer buf
// (nil without momentum).
func sgdStep(w, g, buf *tensor.Tensor, a tensor.SGDArgs) {
	if ob := fused(w); ob != nil {
		ob.SGDStep(w.Operand(), g.Operand(), operand(buf), a)
		return
	}
	sgdFallback(w, g, buf, a, a.WeightDecay, 1)
}

// larsStep applies one LARS step to w with gradient g and momentum buffer
// buf (nil without momentum).
func larsStep(w, g, buf *tensor.Tensor, a tensor.LARSArgs) {
	if ob := fused(w); ob != nil {
		ob.LARSStep(w.Operand(), g.Operand(), operand(buf), a)
		return
	}
	scale, decay := 1.0, 0.0
	if !a.Excluded {
		pn, gn := normOf(w), normOf(g)
		if pn != 0 && gn != 0 {
			scale = a.Eta * pn / (gn + pn*a.WeightDecay + a.Eps)
			if a.ClipLR {
				scale = math.Min(scale/a.LR, 1)
			}
			decay = a.WeightDecay
		}
	}
	sgdFallback(w, g, buf, a.SGD, decay, scale)
}

// normOf returns the Euclidean norm of t through the backend (the squares
// rounded to float32, their sum accumulated by the backend's reduction).
func normOf(t *tensor.Tensor) float64 {
	if t.Numel() == 0 {
		return 0
	}
	return math.Sqrt(tensor.SumAll(tensor.Square(t)))
}

// sgdFallback is SGD's and LARS's step from core operations:
// d = (g + decay*w)*scale, the momentum of a, then w -= lr*d.
func sgdFallback(w, g, buf *tensor.Tensor, a tensor.SGDArgs, decay, scale float64) {
	d := g
	if decay != 0 {
		d = g.Clone()
		d.AddScaledInPlace(float32(decay), w)
	}
	if scale != 1 {
		d = tensor.MulScalar(d, float32(scale))
	}
	if a.Momentum != 0 {
		if a.First {
			tensor.CopyInto(buf, d)
		} else {
			buf.ScaleInPlace(float32(a.Momentum))
			buf.AddScaledInPlace(float32(1-a.Dampening), d)
		}
		if a.Nesterov {
			d = tensor.Add(d, tensor.MulScalar(buf, float32(a.Momentum)))
		} else {
			d = buf
		}
	}
	w.AddScaledInPlace(-float32(a.LR), d)
}

// adamStep applies one Adam or AdamW step to w with gradient g and moment
// estimates m and v.
func adamStep(w, g, m, v *tensor.Tensor, a tensor.AdamArgs) {
	if ob := fused(w); ob != nil {
		ob.AdamStep(w.Operand(), g.Operand(), m.Operand(), v.Operand(), a)
		return
	}
	t := float64(a.Step)
	stepSize := a.LR / (1 - math.Pow(a.Beta1, t))
	invSqrtBC2 := 1 / math.Sqrt(1-math.Pow(a.Beta2, t))
	if a.Decoupled && a.WeightDecay != 0 {
		w.ScaleInPlace(float32(1 - a.LR*a.WeightDecay))
	}
	gj := g
	if !a.Decoupled && a.WeightDecay != 0 {
		gj = g.Clone()
		gj.AddScaledInPlace(float32(a.WeightDecay), w)
	}
	m.ScaleInPlace(float32(a.Beta1))
	m.AddScaledInPlace(float32(1-a.Beta1), gj)
	v.ScaleInPlace(float32(a.Beta2))
	v.AddScaledInPlace(float32(1-a.Beta2), tensor.Square(gj))
	den := tensor.AddScalar(tensor.MulScalar(tensor.Sqrt(v), float32(invSqrtBC2)), float32(a.Eps))
	w.AddScaledInPlace(-float32(stepSize), tensor.Div(m, den))
}

// emaStep computes target = m*target + (1-m)*online.
func emaStep(target, online *tensor.Tensor, m float64) {
	if ob := fused(target); ob != nil {
		ob.EMA(target.Operand(), online.Operand(), m)
		return
	}
	target.ScaleInPlace(float32(m))
	target.AddScaledInPlace(float32(1-m), online)
}

// Package optim holds the fused optimizer steps of the CPU backend: one pass
// over a parameter's float32 elements that updates the parameter and its
// state (momentum buffer, moment estimates) in place, following PyTorch's
// update rules (package nn/optim documents the formulas and dispatches to
// these loops through tensor.OptimizerBackend). The arithmetic of one
// element is done in float64 and rounded once when stored, except the EMA,
// which is float32 as in MoCo's and BYOL's reference code.
//
// The argument structs are the contract of the capability: package tensor
// declares tensor.SGDArgs, LARSArgs and AdamArgs as aliases of them.
package optim

import "math"

// SGD holds the arguments of one SGD step of one parameter.
type SGD struct {
	LR, WeightDecay, Momentum, Dampening float64
	Nesterov                             bool
	// First says that the momentum buffer is used for the first time: it
	// is set to the update instead of being averaged with it.
	First bool
}

// LARS holds the arguments of one LARS step of one parameter: SGD's, with
// the trust coefficient Eta, the norm ratio's Eps, ClipLR (the local rate
// becomes min(lars_lr/lr, 1)) and Excluded (no adaptation, no decay).
type LARS struct {
	SGD
	Eta, Eps         float64
	ClipLR, Excluded bool
}

// Adam holds the arguments of one Adam or AdamW step of one parameter;
// Step is the parameter's step count after increment (1 at the first step).
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	// Decoupled selects AdamW's decoupled weight decay.
	Decoupled bool
	Step      int64
}

// SGDStep applies one step of torch.optim.SGD to w with gradient g and
// momentum buffer buf (unused, and may be nil, when a.Momentum is 0):
//
//	d = g + wd*w
//	buf = d (first)   or   buf = momentum*buf + (1-dampening)*d
//	d = d + momentum*buf (Nesterov)   or   d = buf
//	w = w - lr*d
func SGDStep(w, g, buf []float32, a SGD) {
	lr, wd, mom := a.LR, a.WeightDecay, a.Momentum
	damp := 1 - a.Dampening
	g = g[:len(w)]
	if mom == 0 {
		for j := range w {
			d := float64(g[j]) + wd*float64(w[j])
			w[j] = float32(float64(w[j]) - lr*d)
		}
		return
	}
	buf = buf[:len(w)]
	for j := range w {
		d := float64(g[j]) + wd*float64(w[j])
		d = momentumStep(d, &buf[j], a.First, mom, damp, a.Nesterov)
		w[j] = float32(float64(w[j]) - lr*d)
	}
}

// LARSStep applies one step of LARS (solo-learn's formulation) to w with
// gradient g and momentum buffer buf (unused, and may be nil, when
// a.Momentum is 0). Unless Excluded, when ‖w‖ and ‖g‖ are both non-zero:
//
//	lars_lr = eta * ‖w‖ / (‖g‖ + wd*‖w‖ + eps)     (ClipLR: min(lars_lr/lr, 1))
//	d = (g + wd*w) * lars_lr
//
// otherwise d = g; then SGD's momentum and w = w - lr*d.
func LARSStep(w, g, buf []float32, a LARS) {
	lr, wd, mom := a.LR, a.WeightDecay, a.Momentum
	damp := 1 - a.Dampening
	g = g[:len(w)]
	scale, decay := 1.0, 0.0
	if !a.Excluded {
		pn, gn := Norm(w), Norm(g)
		if pn != 0 && gn != 0 {
			scale = a.Eta * pn / (gn + pn*wd + a.Eps)
			if a.ClipLR {
				scale = math.Min(scale/lr, 1)
			}
			decay = wd
		}
	}
	first := a.First
	if mom != 0 {
		buf = buf[:len(w)]
	}
	for j := range w {
		d := (float64(g[j]) + decay*float64(w[j])) * scale
		if mom != 0 {
			d = momentumStep(d, &buf[j], first, mom, damp, a.Nesterov)
		}
		w[j] = float32(float64(w[j]) - lr*d)
	}
}

// momentumStep applies PyTorch's SGD momentum (shared by SGD and LARS) to
// the update d of one element whose momentum buffer is *b, and returns the
// step to take:
//
//	buf = d                             (first: the buffer's first step)
//	buf = mom*buf + damp*d              (later steps; damp = 1 - dampening)
//	step = d + mom*buf with Nesterov, else buf
func momentumStep(d float64, b *float32, first bool, mom, damp float64, nesterov bool) float64 {
	v := d
	if !first {
		v = mom*float64(*b) + damp*d
	}
	*b = float32(v)
	if nesterov {
		return d + mom*v
	}
	return v
}

// Norm returns the Euclidean norm of x, accumulated in float64 in order.
func Norm(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

// AdamStep applies one step of torch.optim.Adam (or AdamW when Decoupled)
// to w with gradient g and moment estimates m and v. With t = a.Step:
//
//	g = g + wd*w                 (Adam: L2 penalty in the gradient)
//	w = w * (1 - lr*wd)          (AdamW: decoupled decay, before the update)
//	m = beta1*m + (1-beta1)*g
//	v = beta2*v + (1-beta2)*g²
//	w = w - lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)
func AdamStep(w, g, m, v []float32, a Adam) {
	lr, wd, b1, b2, eps := a.LR, a.WeightDecay, a.Beta1, a.Beta2, a.Eps
	t := float64(a.Step)
	stepSize := lr / (1 - math.Pow(b1, t))
	sqrtBC2 := math.Sqrt(1 - math.Pow(b2, t))
	decay, l2 := 1.0, wd
	if a.Decoupled {
		decay, l2 = 1-lr*wd, 0
	}
	adamUpdate(w, g, m, v, b1, b2, eps, stepSize, 1/sqrtBC2, decay, l2)
}

// adamUpdate is the inner loop of Adam: w = w*decay, g = g + l2*w, then the
// moment updates and w -= stepSize * m / (sqrt(v)*invSqrtBC2 + eps).
func adamUpdate(w, g, m, v []float32, b1, b2, eps, stepSize, invSqrtBC2, decay, l2 float64) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	for j := range w {
		x := float64(w[j]) * decay
		gj := float64(g[j]) + l2*x
		mj := b1*float64(m[j]) + (1-b1)*gj
		vj := b2*float64(v[j]) + (1-b2)*gj*gj
		m[j], v[j] = float32(mj), float32(vj)
		w[j] = float32(x - stepSize*mj/(math.Sqrt(vj)*invSqrtBC2+eps))
	}
}

// EMA moves target towards online: target = m*target + (1-m)*online, in
// float32 with m and 1-m rounded to float32 (MoCo's momentum update,
// BYOL's target update).
func EMA(target, online []float32, m float64) {
	mf, of := float32(m), float32(1-m)
	online = online[:len(target)]
	for j := range target {
		target[j] = mf*target[j] + of*online[j]
	}
}

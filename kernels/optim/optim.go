// Package optim holds the fused optimizer steps of the CPU backend: one pass
// over a parameter's float32 elements that updates the parameter and its
// state (momentum buffer, moment estimates) in place, following PyTorch's
// update rules (package nn/optim documents the formulas and dispatches to
// these loops through tensor.OptimizerBackend). The arithmetic of one
// element is done in float64 and rounded once when stored, except the EMA,
// which is float32 as in MoCo's and BYOL's reference code.
//
// The loops run on several goroutines for large parameters (package par's
// rule) and, on amd64 with AVX2, in assembly (loops_amd64.s) that performs
// the Go loops' operations (loops.go) instruction for instruction on four
// or eight elements at a time, so that neither the split nor the assembly
// changes a bit of the result (TestLoops).
//
// The argument structs are the contract of the capability: package tensor
// declares tensor.SGDArgs, LARSArgs and AdamArgs as aliases of them.
package optim

import (
	"math"

	"github.com/duel-ssl/duel/internal/par"
)

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
	k := sgdLoop{wd: a.WeightDecay, scale: 1, lr: a.LR}
	k.setMomentum(a)
	runSGD(w, g, buf, &k)
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
	g = g[:len(w)]
	k := sgdLoop{scale: 1, lr: a.LR}
	if !a.Excluded {
		pn, gn := Norm(w), Norm(g)
		if pn != 0 && gn != 0 {
			k.scale = a.Eta * pn / (gn + pn*a.WeightDecay + a.Eps)
			if a.ClipLR {
				k.scale = math.Min(k.scale/a.LR, 1)
			}
			k.wd = a.WeightDecay
		}
	}
	k.setMomentum(a.SGD)
	runSGD(w, g, buf, &k)
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
	t := float64(a.Step)
	k := adamLoop{
		decay: 1, l2: a.WeightDecay,
		b1: a.Beta1, c1: 1 - a.Beta1, b2: a.Beta2, c2: 1 - a.Beta2,
		stepSize:   a.LR / (1 - math.Pow(a.Beta1, t)),
		invSqrtBC2: 1 / math.Sqrt(1-math.Pow(a.Beta2, t)),
		eps:        a.Eps,
	}
	if a.Decoupled {
		k.decay, k.l2 = 1-a.LR*a.WeightDecay, 0
	}
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	par.For(len(w), par.Workers(len(w)), func(lo, hi int) {
		adamRange(w[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], &k)
	})
}

// EMA moves target towards online: target = m*target + (1-m)*online, in
// float32 with m and 1-m rounded to float32 (MoCo's momentum update,
// BYOL's target update).
func EMA(target, online []float32, m float64) {
	mf, of := float32(m), float32(1-m)
	online = online[:len(target)]
	par.For(len(target), par.Workers(len(target)), func(lo, hi int) {
		emaRange(target[lo:hi], online[lo:hi], mf, of)
	})
}

// Zero sets every element of x to 0, on several goroutines when x is large
// (an optimizer's ZeroGrad).
func Zero(x []float32) {
	par.For(len(x), par.Workers(len(x)), func(lo, hi int) { clear(x[lo:hi]) })
}

// runSGD applies the SGD loop k to w, g and buf (nil without momentum),
// split over goroutines when w is large: every element's arithmetic is its
// own, so the split changes no bit.
func runSGD(w, g, buf []float32, k *sgdLoop) {
	g = g[:len(w)]
	if k.mode&modeMomentum != 0 {
		buf = buf[:len(w)]
	}
	par.For(len(w), par.Workers(len(w)), func(lo, hi int) {
		var b []float32
		if buf != nil {
			b = buf[lo:hi]
		}
		sgdRange(w[lo:hi], g[lo:hi], b, k)
	})
}

package optim

import "math"

// The element loops of the steps, in Go: the references of the assembly
// (loops_amd64.s) and the loops of other builds. Every product that feeds
// an addition or subtraction is converted explicitly, even when it is
// first stored in a variable, which the Go specification says prevents
// fusing it into a fused multiply-add (GOAMD64=v3 and arm64 fuse otherwise): the sums are rounded as the
// assembly rounds them, whatever the architecture or GOAMD64 level.

// Mode bits of sgdLoop.mode.
const (
	modeMomentum = 1 << iota // a momentum buffer is kept
	modeFirst                // the buffer's first step: it is set to the update
	modeNesterov             // Nesterov momentum
)

// sgdLoop holds the constants of SGD's and LARS's loop. Its layout is read
// by the assembly: five float64 then the mode word.
type sgdLoop struct {
	wd, scale, mom, damp, lr float64
	mode                     uint64
}

// setMomentum sets the loop's momentum constants and mode from a.
func (k *sgdLoop) setMomentum(a SGD) {
	if a.Momentum == 0 {
		return
	}
	k.mom, k.damp = a.Momentum, 1-a.Dampening
	k.mode = modeMomentum
	if a.First {
		k.mode |= modeFirst
	}
	if a.Nesterov {
		k.mode |= modeNesterov
	}
}

// sgdGo is SGD's (and LARS's) element loop, PyTorch's update rule:
//
//	d = (g + wd*w) * scale
//	buf = d (first)   or   buf = mom*buf + damp*d      (with momentum)
//	d = d + mom*buf (Nesterov)   or   d = buf           (with momentum)
//	w = w - lr*d
//
// in float64, each stored value rounded once to float32.
func sgdGo(w, g, buf []float32, k *sgdLoop) {
	for j := range w {
		x := float64(w[j])
		d := float64(float64(float64(g[j])+float64(k.wd*x)) * k.scale)
		if k.mode&modeMomentum != 0 {
			v := d
			if k.mode&modeFirst == 0 {
				v = float64(k.mom*float64(buf[j])) + float64(k.damp*d)
			}
			buf[j] = float32(v)
			if k.mode&modeNesterov != 0 {
				d += float64(k.mom * v)
			} else {
				d = v
			}
		}
		w[j] = float32(x - float64(k.lr*d))
	}
}

// adamLoop holds the constants of Adam's loop. Its layout is read by the
// assembly: nine float64.
type adamLoop struct {
	decay, l2, b1, c1, b2, c2, stepSize, invSqrtBC2, eps float64
}

// adamUpdate is Adam's element loop: x = w*decay, g = g + l2*x,
// m = b1*m + c1*g, v = b2*v + c2*g*g, w = x - stepSize*m/(sqrt(v)*invSqrtBC2 + eps).
func adamUpdate(w, g, m, v []float32, k *adamLoop) {
	for j := range w {
		x := float64(float64(w[j]) * k.decay)
		gj := float64(g[j]) + float64(k.l2*x)
		mj := float64(k.b1*float64(m[j])) + float64(k.c1*gj)
		vj := float64(k.b2*float64(v[j])) + float64(float64(k.c2*gj)*gj)
		m[j], v[j] = float32(mj), float32(vj)
		w[j] = float32(x - float64(k.stepSize*mj)/(float64(math.Sqrt(vj)*k.invSqrtBC2)+k.eps))
	}
}

// emaGo is EMA's element loop, in float32.
func emaGo(target, online []float32, mf, of float32) {
	for j := range target {
		target[j] = float32(mf*target[j]) + float32(of*online[j])
	}
}

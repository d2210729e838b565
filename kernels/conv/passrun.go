package conv

import "github.com/duel-ssl/duel/internal/scratch"

// passRun holds the operands of one convolution's three passes, for
// running them by algorithm: Tune's measurements and the benchmarks.
type passRun struct {
	sc         *scratch.Free
	s          Shape
	pl         *Plan // nil when the direct kernels cannot run s
	wd, xd, dy []float32
	yd, dx, dw []float32 // the passes' outputs
}

// newPassRun returns the passes of s on the weight wd, input xd and
// output gradient dy, with output buffers of their sizes.
func newPassRun(s Shape, wd, xd, dy []float32) *passRun {
	p := &passRun{sc: new(scratch.Free), s: s, wd: wd, xd: xd, dy: dy,
		yd: make([]float32, len(dy)), dx: make([]float32, len(xd)), dw: make([]float32, len(wd))}
	if s.geom().directOK() {
		p.pl = CachedPlan(s.H, s.W, s.S)
	}
	return p
}

// run runs pass (0 forward, 1 weight gradient, 2 input gradient) of al as
// training runs it: Winograd transforms the kernels on each pass that
// needs them.
func (p *passRun) run(al Algo, pass int) {
	sc, s, pl := p.sc, p.s, p.pl
	switch al {
	case Winograd, WinogradBF16:
		g := s.geom()
		if al == WinogradBF16 {
			g = s.geomBF16()
		}
		switch pass {
		case 0:
			wu := winoKernels(sc, p.wd, s.Out, s.In)
			winoConv(sc, g, wu, false, p.xd, p.yd, true, false)
			sc.Put(wu)
		case 1:
			winoWeightGrad(sc, g, p.xd, p.dy, p.dw, false)
		default:
			wu := winoKernels(sc, p.wd, s.Out, s.In)
			inputGradWinograd(sc, g, wu, p.dy, p.dx, false)
			sc.Put(wu)
		}
	case Direct:
		switch pass {
		case 0:
			DirectForward(sc, s, pl, p.wd, p.xd, p.yd)
		case 1:
			DirectWeightGrad(sc, s, pl, p.xd, p.dy, p.dw, false)
		default:
			DirectInputGrad(sc, s, pl, p.wd, p.dy, p.dx, false)
		}
	case Im2colBF16:
		switch pass {
		case 0:
			Im2colForwardBF16(sc, s, p.wd, p.xd, p.yd)
		case 1:
			Im2colWeightGradBF16(sc, s, p.xd, p.dy, p.dw, false)
		default:
			Im2colInputGradBF16(sc, s, p.wd, p.dy, p.dx, false)
		}
	case DirectBF16:
		switch pass {
		case 0:
			DirectForwardBF16(sc, s, pl, p.wd, p.xd, p.yd)
		case 1:
			DirectWeightGradBF16(sc, s, pl, p.xd, p.dy, p.dw, false)
		default:
			DirectInputGradBF16(sc, s, pl, p.wd, p.dy, p.dx, false)
		}
	default:
		switch pass {
		case 0:
			Im2colForward(sc, s, p.wd, p.xd, p.yd)
		case 1:
			Im2colWeightGrad(sc, s, p.xd, p.dy, p.dw, false)
		default:
			Im2colInputGrad(sc, s, p.wd, p.dy, p.dx, false)
		}
	}
}

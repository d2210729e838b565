package tensor

import (
	"github.com/duel-ssl/duel/internal/scratch"
	"github.com/duel-ssl/duel/kernels/conv"
)

// ConvShape is the geometry of one call of a 2-d convolution
// (kernels/conv.Shape): batch N, In and Out channels, H x W input maps, a
// square K x K kernel, stride S, zero padding P, and whether the input is
// stored channel-major. The output maps are OutH() x OutW().
type ConvShape = conv.Shape

// ConvAlgo names a convolution algorithm (kernels/conv.Algo): ConvAuto,
// ConvIm2col, ConvWinograd or ConvDirect.
type ConvAlgo = conv.Algo

// The convolution algorithms (kernels/conv's), asked of
// ConvBackend.ConvAlgos.
const (
	// ConvAuto lets the backend choose by shape (conv.Auto).
	ConvAuto = conv.Auto
	// ConvIm2col is im2col + GEMM (conv.Im2col).
	ConvIm2col = conv.Im2col
	// ConvWinograd is Winograd F(2x2, 3x3) (conv.Winograd).
	ConvWinograd = conv.Winograd
	// ConvDirect is the direct 3x3 kernels (conv.Direct).
	ConvDirect = conv.Direct
)

// ConvAlgos are the algorithms of the three passes of one convolution
// (kernels/conv.Algos).
type ConvAlgos = conv.Algos

// ConvSaved is what a backend's ConvForward keeps for the input gradient of
// the same call (the CPU's transformed Winograd kernels), opaque to the
// caller, or nil. The caller hands it to ConvInputGrad, once; a ConvSaved
// that never reaches ConvInputGrad is simply dropped.
type ConvSaved any

// ConvBackend is an optional capability of a Backend, discovered by type
// assertion: the passes of a 2-d convolution (package nn's Conv2d), each
// by an algorithm the backend chooses.
//
// Layouts. Every operand is dense on this backend's storage:
//
//   - x and dx hold N·In·H·W elements, sample-major (NCHW: image after
//     image, each image's In maps of H x W) or, when s.ChannelMajor,
//     channel-major (CNHW: plane c holds map c of every image, image
//     after image); a single image is both;
//   - y and dy hold Out·N·OH·OW elements, always channel-major (CNHW):
//     the whole batch's output is one Out x N·OH·OW matrix;
//   - w and dw are the (Out, In, K, K) weight, row-major;
//   - b and db hold Out elements.
//
// A backend without it cannot run package nn's Conv2d, which then panics
// naming the backend and the capability. The CPU backend runs the passes
// of package kernels/conv (im2col + GEMM, Winograd F(2x2, 3x3) or the
// direct kernels) with their scratch from a process-wide pool.
type ConvBackend interface {
	// ConvAlgos returns the algorithms the backend runs for the passes of
	// s when req is asked for (conv.Auto: its own choice by shape). The
	// caller passes the result to the passes of the call.
	ConvAlgos(s ConvShape, req ConvAlgo) ConvAlgos
	// ConvForward sets y to the convolution of x by w, plus b[c] on every
	// element of output channel c unless b is the zero Operand. keep asks
	// it to keep what ConvInputGrad of the same call may reuse.
	ConvForward(y, x, w, b Operand, s ConvShape, al ConvAlgos, keep bool) ConvSaved
	// ConvInputGrad sets (adds, when acc) dx to the gradient of the
	// convolution with respect to its input, given dy; saved is
	// ConvForward's result (nil: nothing kept).
	ConvInputGrad(dx, dy, w Operand, s ConvShape, al ConvAlgos, saved ConvSaved, acc bool)
	// ConvWeightGrad sets (adds, when acc) dw to the gradient with
	// respect to the weight.
	ConvWeightGrad(dw, dy, x Operand, s ConvShape, al ConvAlgos, acc bool)
	// ConvBiasGrad adds the sum of output channel c of dy into db[c].
	ConvBiasGrad(db, dy Operand, s ConvShape)
}

// kernelScratch is the CPU kernels' pool of short-lived buffers.
var kernelScratch scratch.Free

// winoSaved holds the transformed Winograd kernels of a forward pass.
type winoSaved struct{ u []float32 }

var _ ConvBackend = cpu{}

func (c cpu) ConvAlgos(s ConvShape, req ConvAlgo) ConvAlgos { return c.convAlgos(s, req) }

// directPlan returns the direct kernels' plan of s when one of al's passes
// runs them.
func directPlan(s ConvShape, al ConvAlgos) *conv.Plan {
	for _, a := range []ConvAlgo{al.Forward, al.WeightGrad, al.InputGrad} {
		if a == conv.Direct || a == conv.DirectBF16 {
			return conv.CachedPlan(s.H, s.W, s.S)
		}
	}
	return nil
}

// winoKernels returns the transformed kernels of the (out, in, 3, 3)
// weight w on a buffer from kernelScratch.
func winoKernels(w []float32, out, in int) []float32 {
	u := kernelScratch.Get(conv.WinogradKernelsLen(out, in))
	conv.WinogradKernels(u, w, out, in)
	return u
}

func (cpu) ConvForward(y, x, w, b Operand, s ConvShape, al ConvAlgos, keep bool) ConvSaved {
	const op = "ConvForward"
	yd, xd, wd := flat(op, y), flat(op, x), flat(op, w)
	var saved ConvSaved
	switch al.Forward {
	case conv.Direct:
		conv.DirectForward(&kernelScratch, s, directPlan(s, al), wd, xd, yd)
	case conv.Winograd, conv.WinogradBF16:
		u := winoKernels(wd, s.Out, s.In)
		if al.Forward == conv.WinogradBF16 {
			conv.WinogradForwardBF16(&kernelScratch, s, u, xd, yd)
		} else {
			conv.WinogradForward(&kernelScratch, s, u, xd, yd)
		}
		if keep && (al.InputGrad == conv.Winograd || al.InputGrad == conv.WinogradBF16) {
			saved = &winoSaved{u}
		} else {
			kernelScratch.Put(u)
		}
	case conv.Im2colBF16:
		conv.Im2colForwardBF16(&kernelScratch, s, wd, xd, yd)
	case conv.DirectBF16:
		conv.DirectForwardBF16(&kernelScratch, s, directPlan(s, al), wd, xd, yd)
	default:
		conv.Im2colForward(&kernelScratch, s, wd, xd, yd)
	}
	if !IsZeroOperand(b) {
		conv.AddBias(yd, flat(op, b), s.N*s.OutH()*s.OutW())
	}
	return saved
}

func (cpu) ConvInputGrad(dx, dy, w Operand, s ConvShape, al ConvAlgos, saved ConvSaved, acc bool) {
	const op = "ConvInputGrad"
	dxd, dyd, wd := flat(op, dx), flat(op, dy), flat(op, w)
	switch al.InputGrad {
	case conv.Direct:
		conv.DirectInputGrad(&kernelScratch, s, directPlan(s, al), wd, dyd, dxd, acc)
	case conv.Winograd, conv.WinogradBF16:
		var u []float32 // float32 transformed kernels, whichever precision the forward pass ran
		if ws, ok := saved.(*winoSaved); ok && ws != nil {
			u = ws.u
		} else {
			u = winoKernels(wd, s.Out, s.In)
		}
		if al.InputGrad == conv.WinogradBF16 {
			conv.WinogradInputGradBF16(&kernelScratch, s, u, dyd, dxd, acc)
		} else {
			conv.WinogradInputGrad(&kernelScratch, s, u, dyd, dxd, acc)
		}
		kernelScratch.Put(u)
	case conv.Im2colBF16:
		conv.Im2colInputGradBF16(&kernelScratch, s, wd, dyd, dxd, acc)
	case conv.DirectBF16:
		conv.DirectInputGradBF16(&kernelScratch, s, directPlan(s, al), wd, dyd, dxd, acc)
	default:
		conv.Im2colInputGrad(&kernelScratch, s, wd, dyd, dxd, acc)
	}
}

func (cpu) ConvWeightGrad(dw, dy, x Operand, s ConvShape, al ConvAlgos, acc bool) {
	const op = "ConvWeightGrad"
	dwd, dyd, xd := flat(op, dw), flat(op, dy), flat(op, x)
	switch al.WeightGrad {
	case conv.Direct:
		conv.DirectWeightGrad(&kernelScratch, s, directPlan(s, al), xd, dyd, dwd, acc)
	case conv.Winograd:
		conv.WinogradWeightGrad(&kernelScratch, s, xd, dyd, dwd, acc)
	case conv.WinogradBF16:
		conv.WinogradWeightGradBF16(&kernelScratch, s, xd, dyd, dwd, acc)
	case conv.Im2colBF16:
		conv.Im2colWeightGradBF16(&kernelScratch, s, xd, dyd, dwd, acc)
	case conv.DirectBF16:
		conv.DirectWeightGradBF16(&kernelScratch, s, directPlan(s, al), xd, dyd, dwd, acc)
	default:
		conv.Im2colWeightGrad(&kernelScratch, s, xd, dyd, dwd, acc)
	}
}

func (cpu) ConvBiasGrad(db, dy Operand, s ConvShape) {
	conv.BiasGrad(flat("ConvBiasGrad", db), flat("ConvBiasGrad", dy), s.N*s.OutH()*s.OutW())
}

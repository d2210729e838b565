package nn

import "github.com/duel-ssl/duel/tensor"

// ConvShape is the geometry of a convolution call: batch, channels, input
// map, kernel, stride, padding, and whether the input is channel-major
// (tensor.ConvShape).
type ConvShape = tensor.ConvShape

// ConvAlgo selects how a Conv2d computes its forward pass and gradients
// (tensor.ConvAlgo, kernels/conv.Algo).
type ConvAlgo = tensor.ConvAlgo

const (
	// AlgoAuto picks by shape: the algorithm kernels/conv.Tune measured
	// for the shape on this CPU when the wisdom file has it, else the
	// built-in rules of conv.AutoAlgos (the direct kernels where they were measured
	// to be faster, else Winograd where it was measured to be faster than
	// im2col, else im2col).
	AlgoAuto = tensor.ConvAuto
	// AlgoIm2col always uses im2col + GEMM.
	AlgoIm2col = tensor.ConvIm2col
	// AlgoWinograd uses Winograd F(2x2, 3x3) for every 3x3 stride-1
	// padding-1 convolution, im2col for the others.
	AlgoWinograd = tensor.ConvWinograd
	// AlgoDirect uses the direct kernels of kernels/conv for every 3x3
	// stride-1 padding-1 convolution whose maps hold whole 16-position
	// vectors (in plain Go where AVX-512 is not allowed: slow, for tests),
	// im2col for the others.
	AlgoDirect = tensor.ConvDirect
)

// algos returns the algorithms of the passes of the convolution s on the
// CPU: those c.Algo asks for where they apply (im2col elsewhere), or
// AlgoAuto's choice: the one kernels/conv.Tune measured for this shape on
// this CPU when the wisdom file has it (kernels/conv.WisdomEntry), else
// conv.AutoAlgos's rules (conv.Choose): what the CPU backend's ConvAlgos
// answers, asked of it.
func (c *Conv2d) algos(s ConvShape) tensor.ConvAlgos {
	cb, err := tensor.Lookup(string(tensor.CPU))
	if err != nil {
		panic("nn: " + err.Error())
	}
	return cb.(tensor.ConvBackend).ConvAlgos(s, c.Algo)
}

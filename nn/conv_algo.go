package nn

import "github.com/duel-ssl/duel/kernels/conv"

// ConvAlgo selects how a Conv2d computes its forward pass and gradients.
type ConvAlgo int

const (
	// AlgoAuto picks by shape: the direct kernels where they were measured
	// to be faster (see directPays), else Winograd where it was measured
	// to be faster than im2col (see winogradPays), else im2col.
	AlgoAuto ConvAlgo = iota
	// AlgoIm2col always uses im2col + GEMM.
	AlgoIm2col
	// AlgoWinograd uses Winograd F(2x2, 3x3) for every 3x3 stride-1
	// padding-1 convolution, im2col for the others.
	AlgoWinograd
	// AlgoDirect uses the direct kernels of kernels/conv for every 3x3
	// stride-1 padding-1 convolution whose maps hold whole 16-position
	// vectors (in plain Go where AVX-512 is not allowed: slow, for tests),
	// im2col for the others.
	AlgoDirect
)

// String returns the algorithm's name.
func (a ConvAlgo) String() string {
	switch a {
	case AlgoAuto:
		return "auto"
	case AlgoIm2col:
		return "im2col"
	case AlgoWinograd:
		return "winograd"
	case AlgoDirect:
		return "direct"
	}
	return "ConvAlgo(?)"
}

// direct3x3 reports whether the convolution of geometry g runs through
// the direct kernels of kernels/conv (conv_direct.go).
func (c *Conv2d) direct3x3(g convGeom) bool {
	if !g.directOK() {
		return false
	}
	switch c.Algo {
	case AlgoDirect:
		return true
	case AlgoAuto:
		return conv.Fast() && directPays(g)
	}
	return false
}

// directPays reports whether the direct kernels beat Winograd and im2col
// on g (a convolution they handle, in assembly). They beat im2col on every
// ResNet shape, and Winograd wherever its transforms cost much against its
// GEMMs: per 2x2 outputs, transforms of in+out channels against in*out*16
// multiplications, and small maps, whose tiles are mostly edge.
func directPays(g convGeom) bool {
	if !winogradPays(g) {
		return true
	}
	h := g.cin * g.cout / (g.cin + g.cout)
	return h < 128 && (g.oh < 16 || g.ow < 16)
}

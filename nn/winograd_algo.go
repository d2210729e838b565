package nn

// ConvAlgo selects how a Conv2d computes its forward pass and input
// gradient.
type ConvAlgo int

const (
	// AlgoAuto uses Winograd where it was measured to be faster than
	// im2col (see winogradPays), else im2col.
	AlgoAuto ConvAlgo = iota
	// AlgoIm2col always uses im2col + GEMM.
	AlgoIm2col
	// AlgoWinograd uses Winograd F(2x2, 3x3) for every 3x3 stride-1
	// padding-1 convolution, im2col for the others.
	AlgoWinograd
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
	}
	return "ConvAlgo(?)"
}

// winograd reports whether the convolution of geometry g runs through
// Winograd F(2x2, 3x3).
func (c *Conv2d) winograd(g convGeom) bool {
	if g.k != 3 || g.s != 1 || g.p != 1 {
		return false
	}
	switch c.Algo {
	case AlgoWinograd:
		return true
	case AlgoAuto:
		return winogradPays(g)
	}
	return false
}

// winogradWeightGrad reports whether the weight gradient of the
// convolution of geometry g runs through Winograd F(2x2, 3x3): with
// AlgoWinograd wherever the forward pass does, with AlgoAuto from 128 input
// and output channels (BenchmarkWinogradWeightGrad: 1.15-1.4x; with 64
// channels 0.94-1.2x, the transforms costing about what the GEMMs save).
func (c *Conv2d) winogradWeightGrad(g convGeom) bool {
	return c.winograd(g) && (c.Algo == AlgoWinograd || g.cin >= 128 && g.cout >= 128)
}

// winogradPays reports whether Winograd beats im2col on g (a 3x3 stride-1
// padding-1 convolution), from BenchmarkWinograd (forward and backward,
// batch 8 to 128): it does from 64 input and output channels on maps of at
// least 4x4 (1.05-1.5x forward, 1.05-1.4x backward), not with fewer
// channels (the transforms cost as much as the GEMMs save: 0.35x for the
// 3-channel stem, 0.75-0.95x for 16 and 32 channels) nor on 2x2 maps (one
// tile per image, 0.75x forward).
func winogradPays(g convGeom) bool {
	return g.cin >= 64 && g.cout >= 64 && g.oh >= 4 && g.ow >= 4
}

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

// convAlgos are the algorithms of the three passes of one convolution:
// AlgoIm2col (the GEMM paths), AlgoWinograd or AlgoDirect each.
type convAlgos struct{ fwd, dw, dx ConvAlgo }

// algos returns the algorithms of the passes of the convolution of
// geometry g: those c.Algo asks for where they apply (im2col elsewhere),
// or AlgoAuto's choice: the one TuneConvs measured for this shape on this
// CPU when the wisdom file has it (ConvWisdomEntry), else autoAlgos's
// rules.
func (c *Conv2d) algos(g convGeom) convAlgos {
	all := func(a ConvAlgo) convAlgos { return convAlgos{a, a, a} }
	switch c.Algo {
	case AlgoIm2col:
		return all(AlgoIm2col)
	case AlgoWinograd:
		if g.winogradShape() {
			return all(AlgoWinograd)
		}
		return all(AlgoIm2col)
	case AlgoDirect:
		if g.directOK() {
			return all(AlgoDirect)
		}
		return all(AlgoIm2col)
	}
	if a, ok := tunedConvs()[shapeOf(g)]; ok {
		return a
	}
	return autoAlgos(g, conv.Fast())
}

// autoAlgos is AlgoAuto's choice for g, with or without the direct
// kernels in assembly (fast). The rules come from alternating each pass's
// algorithms on the ResNet-18 and ResNet-18-w16 layers (one core, AMD EPYC
// Zen 5, best of 9; figures in directPays and directWeightGradPays).
func autoAlgos(g convGeom, fast bool) convAlgos {
	a := convAlgos{AlgoIm2col, AlgoIm2col, AlgoIm2col}
	if g.winogradShape() && winogradPays(g) {
		a.fwd, a.dx = AlgoWinograd, AlgoWinograd
		if !fast && winogradWeightGradPays(g) {
			a.dw = AlgoWinograd
		}
	}
	if !fast || !g.directOK() {
		return a
	}
	if directPays(g) {
		a.fwd, a.dx = AlgoDirect, AlgoDirect
	}
	switch {
	case directWeightGradPays(g):
		a.dw = AlgoDirect
	case a.fwd == AlgoWinograd:
		// Where Winograd's forward pass wins, so does its weight
		// gradient (64 channels at 32x32, batch 32: 14.2 ms against 17.3
		// for im2col and 16.1 for the direct kernels).
		a.dw = AlgoWinograd
	}
	return a
}

// directPays reports whether the direct kernels beat Winograd and im2col
// in the forward pass and the input gradient of g (a convolution they
// handle, in assembly). At stride 1 they beat im2col on every ResNet shape
// (1.3-2x), and Winograd wherever its transforms cost much against its
// GEMMs: per 2x2 outputs, transforms of in+out channels against in*out*16
// multiplications, and small maps, whose tiles are mostly edge (128
// channels at 4x4, batch 128: 3.3 ms forward against 4.8; 64 channels at
// 32x32, batch 32: 14.0 against 11.9). At stride 2 they beat im2col up to
// 128 x 128 channels (64 to 128 at 8x8: 2.2 ms against 3.1 forward, 2.3
// against 4.1 input gradient; 256 to 512: 9.6 against 8.3).
func directPays(g convGeom) bool {
	if g.s == 2 {
		return g.cin*g.cout <= 128*128
	}
	if !winogradPays(g) {
		return true
	}
	h := g.cin * g.cout / (g.cin + g.cout)
	return h < 128 && (g.oh < 16 || g.ow < 16)
}

// directWeightGradPays reports whether the direct kernels beat Winograd
// and im2col in the weight gradient of g: on narrow layers (16 channels at
// 32x32, batch 128: 4.2 ms against 7.4 for im2col; 128 at 4x4: 4.5
// against 4.7 for Winograd). With more channels the runs of vectors whose
// input fits the cache get short and the GEMMs win (128 channels at 16x16:
// 21.4 against 12.3 for Winograd); at stride 2 the input's phases are
// split again (64 to 128 at 8x8: 2.7 against 3.6; 128 to 256: 11.5 against
// 8.5).
func directWeightGradPays(g convGeom) bool {
	if g.s == 2 {
		return g.cin*g.cout <= 64*128
	}
	return directPays(g) && g.cin*g.cout <= 128*128
}

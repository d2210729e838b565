package conv

import "github.com/duel-ssl/duel/kernels/gemm"

// Algo selects how a convolution computes its forward pass and gradients.
type Algo int

const (
	// Auto picks by shape: the direct kernels where they were measured
	// to be faster (see directPays), else Winograd where it was measured
	// to be faster than im2col (see winogradPays), else im2col.
	Auto Algo = iota
	// Im2col always uses im2col + GEMM.
	Im2col
	// Winograd uses Winograd F(2x2, 3x3) for every 3x3 stride-1
	// padding-1 convolution, im2col for the others.
	Winograd
	// Direct uses the direct kernels of this package for every 3x3
	// stride-1 padding-1 convolution whose maps hold whole 16-position
	// vectors (in plain Go where AVX-512 is not allowed: slow, for tests),
	// im2col for the others.
	Direct
	// Im2colBF16 is Im2col with the GEMM's factors rounded to bfloat16 and
	// float32 sums (gemm.SgemmBF16): the explicit patch matrix, never the
	// gathered panels (their panels are float32). Auto never picks it: it
	// is a precision, asked for (a CPU backend's bf16 convolutions).
	Im2colBF16
	// DirectBF16 is Direct with the factors rounded to bfloat16 and
	// float32 sums: the direct kernels over words of bfloat16 pairs
	// (VDPBF16PS; in plain Go without AVX512_BF16: slow, for tests), for
	// the convolutions Direct handles. Like Im2colBF16, Auto never picks
	// it (AutoAlgosBF16 does).
	DirectBF16
	// WinogradBF16 is Winograd with the 16 GEMMs' factors (the transformed
	// kernels, input and gradient tiles, computed in float32) rounded to
	// bfloat16 and float32 sums, for the 3x3 stride-1 padding-1
	// convolutions (Im2colBF16 for the others). Rounding after the
	// transforms gives about 1.7 times Im2colBF16's relative RMS error on
	// random operands (TestWinogradBF16ErrorSize; TestWinogradBF16 bounds
	// it elementwise). Auto never picks it (AutoAlgosBF16 does).
	WinogradBF16
)

// String returns the algorithm's name.
func (a Algo) String() string {
	switch a {
	case Auto:
		return "auto"
	case Im2col:
		return "im2col"
	case Winograd:
		return "winograd"
	case Direct:
		return "direct"
	case Im2colBF16:
		return "im2col-bf16"
	case DirectBF16:
		return "direct-bf16"
	case WinogradBF16:
		return "winograd-bf16"
	}
	return "ConvAlgo(?)"
}

// Algos are the algorithms of the three passes of one convolution:
// Im2col (the GEMM paths), Im2colBF16, Winograd, WinogradBF16, Direct or
// DirectBF16 each.
type Algos struct{ Forward, WeightGrad, InputGrad Algo }

// Applies reports whether al can run the passes of the convolution s
// (Direct only with the assembly kernels: fast; DirectBF16 only with them
// and the bfloat16 ones, FastBF16).
func Applies(s Shape, al Algo, fast bool) bool {
	return appliesAt(s, al, fast && (al != DirectBF16 || FastBF16()))
}

// appliesAt is Applies with fast saying whether al's assembly kernels run.
func appliesAt(s Shape, al Algo, fast bool) bool {
	g := s.geom()
	switch al {
	case Winograd, WinogradBF16:
		return g.winogradShape()
	case Direct, DirectBF16:
		return fast && g.directOK()
	}
	return true
}

// AutoAlgos is Auto's built-in choice for the convolution s, with or
// without the direct kernels in assembly (fast, see Fast).
func AutoAlgos(s Shape, fast bool) Algos { return autoAlgos(s.geom(), fast) }

// autoAlgos is Auto's choice for g, with or without the direct
// kernels in assembly (fast). The rules come from alternating each pass's
// algorithms on the ResNet-18 and ResNet-18-w16 layers (one core, AMD EPYC
// Zen 5, best of 9).
func autoAlgos(g geom, fast bool) Algos {
	a := Algos{Im2col, Im2col, Im2col}
	if g.winogradShape() && winogradPays(g) {
		a.Forward, a.InputGrad = Winograd, Winograd
		if !fast && winogradWeightGradPays(g) {
			a.WeightGrad = Winograd
		}
	}
	if !fast || !g.directOK() {
		return a
	}
	if directPays(g) {
		a.Forward, a.InputGrad = Direct, Direct
	}
	switch {
	case directWeightGradPays(g):
		a.WeightGrad = Direct
	case a.Forward == Winograd:
		// Where Winograd's forward pass wins, so does its weight
		// gradient, over im2col and the direct kernels alike.
		a.WeightGrad = Winograd
	}
	return a
}

// directPays reports whether the direct kernels beat Winograd and im2col
// in the forward pass and the input gradient of g (a convolution they
// handle, in assembly). At stride 1 they beat im2col on every ResNet shape,
// and Winograd wherever its transforms cost much against its GEMMs: per
// 2x2 outputs, transforms of in+out channels against in*out*16
// multiplications, and small maps, whose tiles are mostly edge. At stride
// 2 they beat im2col up to 128 x 128 channels.
func directPays(g geom) bool {
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
// and im2col in the weight gradient of g: on narrow layers. With more
// channels the runs of vectors whose input fits the cache get short and
// the GEMMs win (bench/RESULTS.md, "Choices"); at stride 2, where the
// input's phases are split again, they win up to 64 x 128 channels.
func directWeightGradPays(g geom) bool {
	if g.s == 2 {
		return g.cin*g.cout <= 64*128
	}
	return directPays(g) && g.cin*g.cout <= 128*128
}

// AutoAlgosBF16 is the built-in choice of the bfloat16 algorithms of the
// convolution s, with or without the bfloat16 kernels in assembly (fast,
// see FastBF16): DirectBF16 for the passes where it beat Im2colBF16
// (directBF16Pays), WinogradBF16 for the weight gradients where it beat
// both (winogradBF16WeightGradPays), Im2colBF16 for the others.
func AutoAlgosBF16(s Shape, fast bool) Algos {
	g := s.geom()
	a := Algos{Im2colBF16, Im2colBF16, Im2colBF16}
	if !fast {
		return a
	}
	amx := gemm.AMX()
	if g.directOK() {
		f, w, i := directBF16Pays(g, amx)
		if f {
			a.Forward = DirectBF16
		}
		if w {
			a.WeightGrad = DirectBF16
		}
		if i {
			a.InputGrad = DirectBF16
		}
	}
	if winogradBF16WeightGradPays(g, amx) {
		a.WeightGrad = WinogradBF16
	}
	return a
}

// winogradBF16WeightGradPays reports whether WinogradBF16 beats DirectBF16
// and Im2colBF16 in the weight gradient of g, from BenchmarkWinogradBF16
// (AMD EPYC Zen 4, 2 threads; bench/RESULTS.md, "bfloat16 on the CPU"):
// from 128 input and output channels on maps of at least 16x16 and from
// 256 channels on any map with enough tiles, not at 128 channels on 4x4
// maps nor with fewer channels (the transforms cost what the GEMMs save).
// Its forward pass and input gradient are even or slower and stay with
// the others. On AMX tiles the GEMM path is all Im2colBF16 (as
// directBF16Pays).
func winogradBF16WeightGradPays(g geom, amx bool) bool {
	if amx || !g.winogradShape() || g.cin < 128 || g.cout < 128 {
		return false
	}
	th, tw := g.winoTiles()
	wide := g.cin*g.cout > 128*128 || g.oh >= 16 && g.ow >= 16
	return wide && g.n*th*tw >= winoMinPayTiles
}

// directBF16Pays reports, for the forward pass, the weight gradient and
// the input gradient of g (a convolution the direct kernels handle),
// whether DirectBF16 beats Im2colBF16. The rules come from alternating
// the two on the 3x3 layers of ResNet-18-w16 at batch 128 and ResNet-18
// at batch 32 (BenchmarkDirectBF16, AMD EPYC Zen 5, 2 threads, best of 5;
// bench/RESULTS.md, "bfloat16 on the CPU"). At stride 1 they win up to
// 128 x 128 channels; at 256 the forward pass and input gradient are even
// (and ResNet-50's step no faster with them) and the weight gradient
// loses, at 512 all three.
// At stride 2 they read the input through phase planes the GEMM path
// does not need: the forward pass is even, the weight gradient wins on
// the narrowest layer only, the input gradient up to 64 to 128 channels.
// On AMX tiles (amx: gemm.AMX) the GEMM path multiplies several times
// faster than VDPBF16PS, so that the patch matrix is all it costs:
// Im2colBF16 everywhere (not yet measured on such a CPU; `duelctl bench
// step --tune-conv` measures both).
func directBF16Pays(g geom, amx bool) (forward, weightGrad, inputGrad bool) {
	if amx {
		return false, false, false
	}
	c := g.cin * g.cout
	if g.s == 1 {
		ok := c <= 128*128
		return ok, ok, ok
	}
	return false, c <= 32*32, c <= 64*128
}

package conv

import "github.com/duel-ssl/duel/kernels/vecmath"

// The passes of a convolution, one function per algorithm and pass. Each
// reads the input xd in the layout s gives (NCHW, or channel-major when
// s.ChannelMajor), the (Out, In, K, K) weight wd, and writes or reads the
// output y and its gradient dy channel-major (Out planes of N*OH*OW
// floats). The gradients are added to dw and dx when acc, else stored.
// Each splits the batch into chunks of images over the goroutines
// (coarse.go); the weight gradients assign the chunks statically, so that
// no sum depends on timing. Scratch buffers come from sc (nil: allocate).

// Im2colForward writes the convolution s of xd with the weight wd into yd
// through the patch matrix and a GEMM (a 1x1 stride-1 convolution of a
// channel-major input multiplies the input itself).
func Im2colForward(sc Scratch, s Shape, wd, xd, yd []float32) { gemmForward(sc, s.geom(), wd, xd, yd) }

// Im2colWeightGrad writes (adds, when acc) the weight gradient dw of the
// convolution s of xd from dy through the patch matrix and a GEMM.
func Im2colWeightGrad(sc Scratch, s Shape, xd, dy, dw []float32, acc bool) {
	gemmWeightGrad(sc, s.geom(), xd, dy, dw, acc)
}

// Im2colForwardBF16 is Im2colForward with the GEMM's factors rounded to
// bfloat16 and float32 sums (Im2colBF16).
func Im2colForwardBF16(sc Scratch, s Shape, wd, xd, yd []float32) {
	gemmForward(sc, s.geomBF16(), wd, xd, yd)
}

// Im2colWeightGradBF16 is Im2colWeightGrad in bfloat16 (Im2colBF16).
func Im2colWeightGradBF16(sc Scratch, s Shape, xd, dy, dw []float32, acc bool) {
	gemmWeightGrad(sc, s.geomBF16(), xd, dy, dw, acc)
}

// Im2colInputGradBF16 is Im2colInputGrad in bfloat16 (Im2colBF16).
func Im2colInputGradBF16(sc Scratch, s Shape, wd, dy, dx []float32, acc bool) {
	gemmInputGrad(sc, s.geomBF16(), wd, dy, dx, acc)
}

// Im2colInputGrad writes (adds, when acc) the input gradient dx of the
// convolution s with the weight wd from dy: the transposed GEMM for a 1x1
// stride-1 convolution, a transposed convolution for other stride-1 ones,
// else GEMM + col2im.
func Im2colInputGrad(sc Scratch, s Shape, wd, dy, dx []float32, acc bool) {
	gemmInputGrad(sc, s.geom(), wd, dy, dx, acc)
}

// WinogradKernelsLen returns the floats WinogradKernels writes for a
// convolution from in to out channels.
func WinogradKernelsLen(out, in int) int { return 16 * winoLd(out, in) }

// WinogradKernels writes the Winograd-transformed kernels G g G^T of the
// (out, in, 3, 3) weight wd into u (WinogradKernelsLen(out, in) floats),
// over several goroutines: the operand of WinogradForward and
// WinogradInputGrad.
func WinogradKernels(u, wd []float32, out, in int) { winoFilter(u, wd, out, in, true) }

// WinogradForward writes the 3x3 stride-1 padding-1 convolution s of xd
// into yd through Winograd F(2x2, 3x3), from the transformed kernels u of
// its weight (WinogradKernels).
func WinogradForward(sc Scratch, s Shape, u, xd, yd []float32) {
	winoConv(sc, s.geom(), u, false, xd, yd, true, false)
}

// WinogradWeightGrad writes (adds, when acc) the weight gradient dw of
// the 3x3 stride-1 padding-1 convolution s of xd from dy through Winograd
// F(2x2, 3x3) (the adjoint of its pipeline).
func WinogradWeightGrad(sc Scratch, s Shape, xd, dy, dw []float32, acc bool) {
	winoWeightGrad(sc, s.geom(), xd, dy, dw, acc)
}

// WinogradInputGrad writes (adds, when acc) the input gradient dx of the
// 3x3 stride-1 padding-1 convolution s from dy and the transformed kernels
// u of its weight (WinogradKernels): the same convolution of dy with the
// flipped, transposed kernel, through Winograd.
func WinogradInputGrad(sc Scratch, s Shape, u, dy, dx []float32, acc bool) {
	inputGradWinograd(sc, s.geom(), u, dy, dx, acc)
}

// WinogradForwardBF16 is WinogradForward with the 16 GEMMs' factors (the
// transformed kernels and input tiles) rounded to bfloat16 and float32
// sums (WinogradBF16).
func WinogradForwardBF16(sc Scratch, s Shape, u, xd, yd []float32) {
	winoConv(sc, s.geomBF16(), u, false, xd, yd, true, false)
}

// WinogradWeightGradBF16 is WinogradWeightGrad in bfloat16 (WinogradBF16):
// the transformed input and output-gradient tiles rounded.
func WinogradWeightGradBF16(sc Scratch, s Shape, xd, dy, dw []float32, acc bool) {
	winoWeightGrad(sc, s.geomBF16(), xd, dy, dw, acc)
}

// WinogradInputGradBF16 is WinogradInputGrad in bfloat16 (WinogradBF16):
// the transformed kernels and output-gradient tiles rounded.
func WinogradInputGradBF16(sc Scratch, s Shape, u, dy, dx []float32, acc bool) {
	inputGradWinograd(sc, s.geomBF16(), u, dy, dx, acc)
}

// DirectForward writes the 3x3 padding-1 convolution s of xd with the
// weight wd into yd through the direct kernels (Forward); pl is the plan
// of s's maps and stride (NewPlan(s.H, s.W, s.S)).
func DirectForward(sc Scratch, s Shape, pl *Plan, wd, xd, yd []float32) {
	directForward(sc, s.geom(), pl, wd, xd, yd)
}

// DirectWeightGrad writes (adds, when acc) the weight gradient dw of the
// 3x3 padding-1 convolution s of xd from dy through the direct kernels
// (WeightGrad); pl is as for DirectForward.
func DirectWeightGrad(sc Scratch, s Shape, pl *Plan, xd, dy, dw []float32, acc bool) {
	directWeightGrad(sc, s.geom(), pl, xd, dy, dw, acc)
}

// DirectInputGrad writes (adds, when acc) the input gradient dx of the
// 3x3 padding-1 convolution s with the weight wd from dy through the
// direct kernels (Forward with the flipped kernel at stride 1, InputGrad
// at stride 2); pl is as for DirectForward.
func DirectInputGrad(sc Scratch, s Shape, pl *Plan, wd, dy, dx []float32, acc bool) {
	directInputGrad(sc, s.geom(), pl, wd, dy, dx, acc)
}

// DirectForwardBF16 is DirectForward with the factors rounded to bfloat16
// and float32 sums (DirectBF16): the direct kernels over word planes of
// the input's channel pairs.
func DirectForwardBF16(sc Scratch, s Shape, pl *Plan, wd, xd, yd []float32) {
	directForwardBF16(sc, s.geom(), pl, wd, xd, yd)
}

// DirectWeightGradBF16 is DirectWeightGrad in bfloat16 (DirectBF16), over
// word planes of image pairs.
func DirectWeightGradBF16(sc Scratch, s Shape, pl *Plan, xd, dy, dw []float32, acc bool) {
	directWeightGradBF16(sc, s.geom(), pl, xd, dy, dw, acc)
}

// DirectInputGradBF16 is DirectInputGrad in bfloat16 (DirectBF16), over
// word planes of the output gradient's channel pairs.
func DirectInputGradBF16(sc Scratch, s Shape, pl *Plan, wd, dy, dx []float32, acc bool) {
	directInputGradBF16(sc, s.geom(), pl, wd, dy, dx, acc)
}

// AddBias adds b[ch] to every element of output plane ch of y (planes ld
// floats apart, len(b) of them): the bias of a convolution.
func AddBias(y, b []float32, ld int) {
	for ch := range b {
		row := y[ch*ld : (ch+1)*ld]
		for j := range row {
			row[j] += b[ch]
		}
	}
}

// BiasGrad adds the sum of output-gradient plane ch of dy (planes ld
// floats apart) into db[ch], for each of the len(db) channels.
func BiasGrad(db, dy []float32, ld int) {
	for ch := range db {
		db[ch] += vecmath.Sum(dy[ch*ld : (ch+1)*ld])
	}
}

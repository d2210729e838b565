package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/tensor"
)

// winoCases are 3x3 stride-1 padding-1 convolutions of odd and even sizes,
// 1x1 maps, batch 1, channel counts that are multiples of nothing, in both
// input layouts, some large enough to be split over goroutines, the last
// three with enough tiles to be split into chunks of images (winoWhole).
var winoCases = []struct {
	n, in, out, h, w int
	cm, bias         bool
}{
	{1, 1, 1, 1, 1, true, false},
	{1, 3, 2, 1, 1, false, true},
	{2, 2, 3, 5, 4, false, true},
	{1, 5, 7, 7, 9, true, false},
	{3, 7, 5, 2, 3, true, true},
	{4, 3, 11, 6, 6, false, false},
	{2, 13, 6, 1, 8, true, false},
	{5, 6, 9, 9, 1, false, true},
	{7, 17, 19, 11, 13, true, false},
	{9, 24, 40, 15, 15, true, true},
	{6, 33, 31, 10, 7, false, false},
	{5, 64, 48, 16, 16, true, false},
	{32, 64, 64, 4, 4, true, false},
	{6, 16, 24, 30, 30, true, true},
	{5, 20, 12, 33, 31, false, false},
	{5, 24, 28, 33, 31, false, true},
}

// TestWinogradMatchesIm2col runs forward and backward of every case
// through Winograd and im2col and compares outputs and gradients (float32
// tolerance relative to each tensor's largest element), with and without an
// arena and on one core.
func TestWinogradMatchesIm2col(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 17))
	for _, tc := range winoCases {
		name := fmt.Sprintf("n%d-%dto%d-%dx%d-cm%v", tc.n, tc.in, tc.out, tc.h, tc.w, tc.cm)
		t.Run(name, func(t *testing.T) {
			c := NewConv2d(tc.in, tc.out, 3, 1, 1, tc.bias, r)
			var x *autograd.Var
			if tc.cm {
				x = cnhwVar(r, tc.n, tc.in, tc.h, tc.w)
			} else {
				x = autograd.NewVar(randTensor(r, tc.n, tc.in, tc.h, tc.w), true)
			}
			proj := randTensor(r, tc.n, tc.out, tc.h, tc.w).Data()
			c.Algo = AlgoIm2col
			want := convGrads(c, x, proj)
			for _, procs := range []int{0, 1} {
				for _, arena := range []*Arena{nil, NewArena()} {
					c.Algo = AlgoWinograd
					c.SetArena(arena)
					if procs > 0 {
						procs = runtime.GOMAXPROCS(procs)
					}
					got := convGrads(c, x, proj)
					if procs > 0 {
						runtime.GOMAXPROCS(procs)
					}
					c.SetArena(nil)
					for i, what := range []string{"y", "dx", "dW", "db"}[:len(want)] {
						if err := closeTo(got[i], want[i], 1e-5); err != "" {
							t.Fatalf("%s: %s", what, err)
						}
					}
				}
			}
		})
	}
}

// closeTo reports the first element of got farther than tol times the
// largest |want| from want, or "".
func closeTo(got, want []float32, tol float64) string {
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= tol*scale) {
			return fmt.Sprintf("[%d] = %v, want %v (scale %g)", i, got[i], want[i], scale)
		}
	}
	return ""
}

// TestWinogradGradcheck checks the Winograd path against float64 central
// differences, NCHW and channel-major inputs, odd sizes.
func TestWinogradGradcheck(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for _, tc := range []struct {
		name string
		c    *Conv2d
		x    *autograd.Var
	}{
		{"2to3-5x4", NewConv2d(2, 3, 3, 1, 1, true, r), autograd.NewVar(randTensor(r, 2, 2, 5, 4), true)},
		{"3to2-3x7-cm", NewConv2d(3, 2, 3, 1, 1, false, r), cnhwVar(r, 3, 3, 3, 7)},
		{"1to1-1x1", NewConv2d(1, 1, 3, 1, 1, true, r), autograd.NewVar(randTensor(r, 1, 1, 1, 1), true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Algo = AlgoWinograd
			gradcheck.Assert(t, func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
				return tc.c.Forward(tp, in[0])
			}, []*tensor.Tensor{tc.x.Value}, gradcheck.Options{Params: Parameters(tc.c)})
		})
	}
}

// refConv64 returns the float64 convolution (3x3, stride 1, padding 1) of
// x (n, in, h, w) with wd (out, in, 3, 3), NCHW.
func refConv64(x, wd []float32, n, in, out, h, w int) []float64 {
	y := make([]float64, n*out*h*w)
	for im := range n {
		for o := range out {
			for yy := range h {
				for xx := range w {
					var s float64
					for ci := range in {
						for a := range 3 {
							iy := yy - 1 + a
							if iy < 0 || iy >= h {
								continue
							}
							for b := range 3 {
								ix := xx - 1 + b
								if ix < 0 || ix >= w {
									continue
								}
								s += float64(x[((im*in+ci)*h+iy)*w+ix]) * float64(wd[((o*in+ci)*3+a)*3+b])
							}
						}
					}
					y[((im*out+o)*h+yy)*w+xx] = s
				}
			}
		}
	}
	return y
}

// TestWinogradAccuracy compares the Winograd and im2col outputs with a
// float64 reference: Winograd's error must stay within a small multiple of
// im2col's (both are float32 sums of in*9 products).
func TestWinogradAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	const n, in, out, h, w = 2, 96, 8, 9, 8
	c := NewConv2d(in, out, 3, 1, 1, false, r)
	x := autograd.NewVar(randTensor(r, n, in, h, w), false)
	want := refConv64(x.Value.Data(), c.Weight.Value.Data(), n, in, out, h, w)
	maxErr := func(a ConvAlgo) float64 {
		c.Algo = a
		y := c.Forward(nil, x).Value.Contiguous().Data()
		var e float64
		for i, v := range want {
			e = math.Max(e, math.Abs(float64(y[i])-v))
		}
		return e
	}
	ew, ei := maxErr(AlgoWinograd), maxErr(AlgoIm2col)
	t.Logf("max |error| vs float64: winograd %.3g, im2col %.3g", ew, ei)
	if ew > 4*ei+1e-6 {
		t.Fatalf("winograd error %g, im2col %g", ew, ei)
	}
}

// TestWinogradAccumulates checks that a second backward pass adds to the
// gradients of the input and the weight (chunked and whole-batch paths).
func TestWinogradAccumulates(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct{ n, c, h int }{{3, 5, 7}, {5, 24, 33}} {
		c := NewConv2d(tc.c, tc.c, 3, 1, 1, true, r)
		c.Algo = AlgoWinograd
		x := cnhwVar(r, tc.n, tc.c, tc.h, tc.h)
		proj := randTensor(r, tc.n, tc.c, tc.h, tc.h)
		once := convGrads(c, x, proj.Data())
		for i := range once {
			once[i] = append([]float32(nil), once[i]...) // Data may alias the gradient
		}
		tp := autograd.NewTape()
		y := c.Forward(tp, x)
		tp.BackwardWith(y, proj)
		twice := [][]float32{x.Grad.Contiguous().Data(), c.Weight.Grad.Contiguous().Data(), c.Bias.Grad.Contiguous().Data()}
		for i, what := range []string{"dx", "dW", "db"} {
			want := make([]float32, len(once[i+1]))
			for j, v := range once[i+1] {
				want[j] = 2 * v
			}
			if err := closeTo(twice[i], want, 1e-6); err != "" {
				t.Fatalf("n%d-c%d: %s: %s", tc.n, tc.c, what, err)
			}
		}
	}
}

// TestConvChoice checks the algorithms AlgoAuto, AlgoIm2col, AlgoWinograd
// and AlgoDirect pick for the passes of some convolutions (forward, weight
// gradient, input gradient: I im2col, W Winograd, D direct); AlgoAuto picks
// the direct kernels only where they run in assembly (conv.Fast).
func TestConvChoice(t *testing.T) {
	for _, tc := range []struct {
		algo                ConvAlgo
		n, in, out, k, s, h int
		fast, slow          string
	}{
		{AlgoAuto, 32, 64, 64, 3, 1, 32, "WWW", "WIW"},
		{AlgoAuto, 32, 128, 128, 3, 1, 16, "WWW", "WWW"},
		{AlgoAuto, 32, 512, 512, 3, 1, 4, "WWW", "WWW"},
		{AlgoAuto, 32, 256, 256, 3, 1, 8, "WWW", "WWW"},
		{AlgoAuto, 8, 512, 512, 3, 1, 4, "DID", "III"},
		{AlgoAuto, 32, 512, 512, 3, 1, 2, "III", "III"},
		{AlgoAuto, 32, 3, 64, 3, 1, 32, "DDD", "III"},
		{AlgoAuto, 128, 32, 32, 3, 1, 16, "DDD", "III"},
		{AlgoAuto, 128, 64, 64, 3, 1, 8, "DDD", "III"},
		{AlgoAuto, 32, 64, 64, 3, 1, 16, "WWW", "WIW"},
		{AlgoAuto, 128, 128, 128, 3, 1, 4, "DDD", "WWW"},
		{AlgoAuto, 128, 64, 128, 3, 1, 8, "DDD", "III"},
		{AlgoAuto, 128, 16, 32, 3, 2, 32, "DDD", "III"},
		{AlgoAuto, 32, 128, 256, 3, 2, 16, "III", "III"},
		{AlgoAuto, 32, 64, 128, 3, 2, 32, "DDD", "III"},
		{AlgoAuto, 32, 16, 16, 3, 1, 5, "III", "III"},
		{AlgoAuto, 32, 16, 32, 1, 2, 32, "III", "III"},
		{AlgoIm2col, 32, 256, 256, 3, 1, 8, "III", "III"},
		{AlgoIm2col, 32, 16, 16, 3, 1, 8, "III", "III"},
		{AlgoWinograd, 1, 3, 2, 3, 1, 1, "WWW", "WWW"},
		{AlgoWinograd, 32, 16, 16, 3, 1, 8, "WWW", "WWW"},
		{AlgoWinograd, 4, 64, 64, 1, 1, 8, "III", "III"},
		{AlgoWinograd, 4, 64, 64, 3, 2, 8, "III", "III"},
		{AlgoDirect, 32, 512, 512, 3, 1, 8, "DDD", "DDD"},
		{AlgoDirect, 2, 3, 5, 3, 2, 8, "DDD", "DDD"},
		{AlgoDirect, 2, 3, 5, 3, 1, 5, "III", "III"},
		{AlgoDirect, 2, 3, 5, 3, 2, 6, "III", "III"},
	} {
		c := &Conv2d{In: tc.in, Out: tc.out, Kernel: tc.k, Stride: tc.s, Padding: tc.k / 2, Algo: tc.algo}
		g := ConvShape{N: tc.n, In: tc.in, Out: tc.out, H: tc.h, W: tc.h, K: tc.k, S: tc.s, P: tc.k / 2}
		want := tc.slow
		if conv.Fast() || tc.algo != AlgoAuto {
			want = tc.fast
		}
		code := map[ConvAlgo]string{AlgoIm2col: "I", AlgoWinograd: "W", AlgoDirect: "D"}
		a := c.algos(g)
		if tc.algo == AlgoAuto {
			a = conv.AutoAlgos(g, conv.Fast()) // the rules, whatever this machine's wisdom file holds
		}
		if got := code[a.Forward] + code[a.WeightGrad] + code[a.InputGrad]; got != want {
			t.Errorf("%v %+v: %s, want %s", tc.algo, g, got, want)
		}
		if a := conv.AutoAlgos(g, false); tc.algo == AlgoAuto && code[a.Forward]+code[a.WeightGrad]+code[a.InputGrad] != tc.slow {
			t.Errorf("%v %+v without the assembly kernels: %s, want %s", tc.algo, g, code[a.Forward]+code[a.WeightGrad]+code[a.InputGrad], tc.slow)
		}
	}
}

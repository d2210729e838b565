package nn

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/autograd/gradcheck"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/tensor"
)

// directCases are 3x3 padding-1 convolutions the direct kernels handle
// (output maps of whole 16-position vectors; even maps at stride 2): batch
// 1, one vector per image, rows narrower and wider than a vector, channel
// counts that are multiples of nothing, both input layouts, and the
// ResNet-18-w16 shapes large enough to be split over goroutines.
var directCases = []struct {
	n, in, out, h, w, s int
	cm, bias            bool
}{
	{1, 1, 1, 4, 4, 1, true, false},
	{1, 3, 2, 2, 8, 1, false, true},
	{2, 2, 3, 1, 16, 1, false, true},
	{3, 7, 5, 16, 1, 1, true, true},
	{4, 3, 11, 4, 12, 1, false, false},
	{2, 13, 6, 8, 8, 1, true, false},
	{5, 17, 19, 6, 8, 1, false, true},
	{3, 9, 33, 32, 32, 1, true, false},
	{16, 16, 16, 32, 32, 1, true, false},
	{32, 32, 32, 16, 16, 1, true, true},
	{64, 64, 64, 8, 8, 1, true, false},
	{16, 3, 16, 32, 32, 1, false, false},
	{32, 128, 128, 4, 4, 1, true, false},
	{1, 2, 3, 8, 8, 2, true, true},
	{3, 5, 7, 8, 8, 2, false, false},
	{2, 3, 4, 4, 32, 2, true, false},
	{5, 6, 2, 16, 24, 2, false, true},
	{16, 16, 32, 32, 32, 2, true, false},
	{32, 64, 128, 8, 8, 2, true, false},
}

// TestDirectMatchesIm2col runs forward and backward of every case through
// the direct kernels and im2col and compares outputs and gradients, with
// and without an arena and on one core.
func TestDirectMatchesIm2col(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 18))
	for _, tc := range directCases {
		name := fmt.Sprintf("n%d-%dto%d-%dx%d-s%d-cm%v", tc.n, tc.in, tc.out, tc.h, tc.w, tc.s, tc.cm)
		t.Run(name, func(t *testing.T) {
			if !conv.Fast() && tc.n*tc.in*tc.out*tc.h*tc.w > 1<<20 {
				t.Skip("plain-Go kernels: the large cases take too long")
			}
			c := NewConv2d(tc.in, tc.out, 3, tc.s, 1, tc.bias, r)
			var x *autograd.Var
			if tc.cm {
				x = cnhwVar(r, tc.n, tc.in, tc.h, tc.w)
			} else {
				x = autograd.NewVar(randTensor(r, tc.n, tc.in, tc.h, tc.w), true)
			}
			proj := randTensor(r, tc.n, tc.out, tc.h/tc.s, tc.w/tc.s).Data()
			c.Algo = AlgoIm2col
			want := convGrads(c, x, proj)
			for _, procs := range []int{0, 1} {
				for _, arena := range []*Arena{nil, NewArena()} {
					c.Algo = AlgoDirect
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

// TestDirectGradcheck checks the direct path against float64 central
// differences, NCHW and channel-major inputs.
func TestDirectGradcheck(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2))
	for _, tc := range []struct {
		name string
		c    *Conv2d
		x    *autograd.Var
	}{
		{"2to3-4x4", NewConv2d(2, 3, 3, 1, 1, true, r), autograd.NewVar(randTensor(r, 2, 2, 4, 4), true)},
		{"3to2-2x8-cm", NewConv2d(3, 2, 3, 1, 1, false, r), cnhwVar(r, 3, 3, 2, 8)},
		{"1to1-16x1", NewConv2d(1, 1, 3, 1, 1, true, r), autograd.NewVar(randTensor(r, 1, 1, 16, 1), true)},
		{"2to3-8x8-s2", NewConv2d(2, 3, 3, 2, 1, true, r), autograd.NewVar(randTensor(r, 2, 2, 8, 8), true)},
		{"3to2-4x16-s2-cm", NewConv2d(3, 2, 3, 2, 1, false, r), cnhwVar(r, 2, 3, 4, 16)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Algo = AlgoDirect
			gradcheck.Assert(t, func(tp *autograd.Tape, in []*autograd.Var) *autograd.Var {
				return tc.c.Forward(tp, in[0])
			}, []*tensor.Tensor{tc.x.Value}, gradcheck.Options{Params: Parameters(tc.c)})
		})
	}
}

// TestDirectAccumulates checks that a second backward pass adds to the
// gradients of the input and the weight.
func TestDirectAccumulates(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		n, c, h, s int
		cm         bool
	}{{3, 5, 4, 1, true}, {5, 24, 8, 1, false}, {9, 16, 16, 1, true}, {3, 4, 8, 2, true}, {4, 6, 16, 2, false}} {
		c := NewConv2d(tc.c, tc.c, 3, tc.s, 1, true, r)
		c.Algo = AlgoDirect
		var x *autograd.Var
		if tc.cm {
			x = cnhwVar(r, tc.n, tc.c, tc.h, tc.h)
		} else {
			x = autograd.NewVar(randTensor(r, tc.n, tc.c, tc.h, tc.h), true)
		}
		proj := randTensor(r, tc.n, tc.c, tc.h/tc.s, tc.h/tc.s)
		once := convGrads(c, x, proj.Data())
		for i := range once {
			once[i] = append([]float32(nil), once[i]...)
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

// TestDirectDeterministic checks that the direct path gives the same bits
// twice, on several goroutines.
func TestDirectDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	c := NewConv2d(16, 16, 3, 1, 1, false, r)
	c.Algo = AlgoDirect
	x := cnhwVar(r, 12, 16, 8, 8)
	proj := randTensor(r, 12, 16, 8, 8).Data()
	a := convGrads(c, x, proj)
	for i := range a {
		a[i] = append([]float32(nil), a[i]...)
	}
	b := convGrads(c, x, proj)
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("tensor %d [%d]: %v then %v", i, j, a[i][j], b[i][j])
			}
		}
	}
}

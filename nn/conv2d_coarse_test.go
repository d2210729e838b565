package nn

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/kernels/conv"
	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/tensor"
)

// convGrads runs a forward and backward pass of c on x (output gradient
// proj) and returns y, dx, dW and db in NCHW order.
func convGrads(c *Conv2d, x *autograd.Var, proj []float32) [][]float32 {
	x.Grad, c.Weight.Grad = nil, nil
	if c.Bias != nil {
		c.Bias.Grad = nil
	}
	tp := autograd.NewTape()
	y := c.Forward(tp, x)
	tp.BackwardWith(y, tensor.FromSlice(append([]float32(nil), proj...), y.Value.Shape()...))
	out := [][]float32{y.Value.Contiguous().Data(), x.Grad.Contiguous().Data(), c.Weight.Grad.Contiguous().Data()}
	if c.Bias != nil {
		out = append(out, c.Bias.Grad.Contiguous().Data())
	}
	return out
}

// TestConv2dCoarse checks convolutions large enough to be split over
// goroutines (kernels/conv's coarsePlan) against the same convolutions on one core, for
// every path: im2col, 1x1 direct, transposed input gradient, col2im.
func TestConv2dCoarse(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2")
	}
	r := rand.New(rand.NewPCG(3, 9))
	for _, tc := range []struct {
		name                   string
		n, in, out, k, s, p, h int
		cm, bias               bool
	}{
		{"3x3", 7, 16, 24, 3, 1, 1, 20, true, true},
		{"3x3-nchw", 5, 16, 32, 3, 1, 1, 20, false, false},
		{"3x3-s2", 9, 16, 32, 3, 2, 1, 33, true, false},
		{"3x3-transposed-dW", 5, 16, 32, 3, 1, 1, 32, true, false},
		{"1x1", 11, 64, 48, 1, 1, 0, 16, true, false},
		{"1x1-s2", 12, 64, 48, 1, 2, 0, 32, true, true},
	} {
		c := NewConv2d(tc.in, tc.out, tc.k, tc.s, tc.p, tc.bias, r)
		var x *autograd.Var
		if tc.cm {
			x = cnhwVar(r, tc.n, tc.in, tc.h, tc.h)
		} else {
			x = autograd.NewVar(randTensor(r, tc.n, tc.in, tc.h, tc.h), true)
		}
		oh := conv.OutSize(tc.h, tc.k, tc.s, tc.p)
		// The flops of the convolution's GEMM over the batch: kernels/conv
		// splits it over goroutines from 2*gemm.MinParallelFlops.
		flops := 2 * float64(tc.out) * float64(tc.in*tc.k*tc.k) * float64(tc.n*oh*oh)
		if flops < 2*gemm.MinParallelFlops {
			t.Fatalf("%s: %g flops, too small to be split", tc.name, flops)
		}
		proj := randTensor(r, tc.n, tc.out, oh, oh).Data()
		for _, arena := range []*Arena{nil, NewArena()} {
			c.SetArena(arena)
			got := convGrads(c, x, proj)
			prev := runtime.GOMAXPROCS(1)
			want := convGrads(c, x, proj)
			runtime.GOMAXPROCS(prev)
			for i, name := range []string{"y", "dx", "dW", "db"}[:len(want)] {
				var scale float64
				for _, v := range want[i] {
					scale = math.Max(scale, math.Abs(float64(v)))
				}
				for j := range want[i] {
					if d := math.Abs(float64(got[i][j] - want[i][j])); d > 1e-5*scale {
						t.Fatalf("%s %s[%d] = %v, one core %v", tc.name, name, j, got[i][j], want[i][j])
					}
				}
			}
			checkWeightGrad(t, tc.name, got[2], x, proj, tc.n, tc.in, tc.out, tc.k, tc.s, tc.p, tc.h, oh)
			if arena != nil {
				arena.Reset()
			}
		}
	}
}

// checkWeightGrad compares dw with the float64 weight gradient of a
// convolution of x (n, in, h, h) with output gradient proj (n, out, oh, oh).
func checkWeightGrad(t *testing.T, name string, dw []float32, x *autograd.Var, proj []float32, n, in, out, k, s, p, h, oh int) {
	t.Helper()
	xd := x.Value.Contiguous().Data()
	want := make([]float64, out*in*k*k)
	var scale float64
	for o := range out {
		for ci := range in {
			for a := range k {
				for b := range k {
					var sum float64
					for im := range n {
						for y := range oh {
							iy := y*s - p + a
							if iy < 0 || iy >= h {
								continue
							}
							for xx := range oh {
								ix := xx*s - p + b
								if ix < 0 || ix >= h {
									continue
								}
								sum += float64(proj[((im*out+o)*oh+y)*oh+xx]) * float64(xd[((im*in+ci)*h+iy)*h+ix])
							}
						}
					}
					want[((o*in+ci)*k+a)*k+b] = sum
					scale = math.Max(scale, math.Abs(sum))
				}
			}
		}
	}
	for i := range want {
		if d := math.Abs(float64(dw[i]) - want[i]); d > 1e-4*scale {
			t.Fatalf("%s: dW[%d] = %v, want %v", name, i, dw[i], want[i])
		}
	}
}

package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/autograd"
	"github.com/duel-ssl/duel/nn"
	"github.com/duel-ssl/duel/tensor"
)

// TestConv2dEmulated runs package nn's Conv2d forward and backward on the
// CUDA backend (conv.cu on the emulator) and on the CPU: the output, the
// input's gradient and the parameters' gradients must agree within
// float32 summation error (1e-4 * (1 + |CPU|)). It skips without g++ or
// under -short.
func TestConv2dEmulated(t *testing.T) {
	dev := emuTensorDevice(t)
	tests := []struct {
		name             string
		in, out, k, s, p int
		bias             bool
		n, h, w          int
	}{
		{"3x3Bias", 3, 5, 3, 1, 1, true, 2, 8, 7},
		{"3x3Stride2", 4, 6, 3, 2, 1, false, 2, 9, 7},
		{"1x1Stride2", 4, 3, 1, 2, 0, false, 2, 6, 6},
		{"7x7Stem", 3, 4, 7, 2, 3, true, 2, 12, 11},
		{"OneImage", 2, 3, 3, 1, 1, true, 1, 5, 4},
	}
	run := func(t *testing.T, d tensor.Device, c *nn.Conv2d, in *tensor.Tensor) [][]float32 {
		if err := nn.To(c, d); err != nil {
			t.Fatal(err)
		}
		v, err := in.To(d)
		if err != nil {
			t.Fatal(err)
		}
		x := autograd.Param(v, "x")
		tp := autograd.NewTape()
		out := c.Forward(tp, x)
		w := tensor.New(out.Value.Shape()...)
		for i := range w.Data() {
			w.Data()[i] = 0.5 + 0.25*float32(i%5)
		}
		wd, err := w.To(d)
		if err != nil {
			t.Fatal(err)
		}
		tp.Backward(autograd.SumAll(tp, autograd.Mul(tp, out, autograd.Const(wd))))
		host := func(t2 *tensor.Tensor) []float32 {
			h, err := t2.To(tensor.CPU)
			if err != nil {
				t.Fatal(err)
			}
			return h.Contiguous().Data()
		}
		res := [][]float32{host(out.Value), host(x.Grad), host(c.Weight.Grad)}
		if c.Bias != nil {
			res = append(res, host(c.Bias.Grad))
		}
		return res
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() *nn.Conv2d {
				return nn.NewConv2d(tc.in, tc.out, tc.k, tc.s, tc.p, tc.bias, rand.New(rand.NewPCG(3, 4)))
			}
			in := tensor.RandN(rand.New(rand.NewPCG(5, 6)), tc.n, tc.in, tc.h, tc.w)
			want := run(t, tensor.CPU, mk(), in)
			got := run(t, dev, mk(), in)
			for k, what := range []string{"output", "input grad", "weight grad", "bias grad"}[:len(want)] {
				if len(got[k]) != len(want[k]) {
					t.Fatalf("%s: %d elements, want %d", what, len(got[k]), len(want[k]))
				}
				for i := range got[k] {
					if d := math.Abs(float64(got[k][i] - want[k][i])); !(d <= 1e-4*(1+math.Abs(float64(want[k][i])))) {
						t.Fatalf("%s: element %d: %g, CPU %g", what, i, got[k][i], want[k][i])
					}
				}
			}
		})
	}
}

// TestArenaMaxPoolEmulated steps nn's MaxPool2d with an arena on the CUDA
// backend (pool.cu on the emulator) three times: the indices it keeps for
// the backward pass come from the arena and go back to it, never to the
// backend (a buffer released to the backend and handed out again by the
// arena would panic as used after Release), and every step gives the
// CPU's output and input gradient.
func TestArenaMaxPoolEmulated(t *testing.T) {
	dev := emuTensorDevice(t)
	r := rand.New(rand.NewPCG(8, 9))
	host := tensor.New(2, 3, 9, 7)
	for i, d := 0, host.Data(); i < len(d); i++ {
		d[i] = float32(r.NormFloat64())
	}
	onDev, err := host.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	run := func(x *tensor.Tensor, a *nn.Arena) (out, grad []float32) {
		mp := nn.NewMaxPool2d(3, 2, 1)
		mp.SetArena(a)
		in := autograd.NewVar(x, true)
		tp := autograd.NewTape()
		y := mp.Forward(tp, in)
		tp.Backward(autograd.SumAll(tp, y))
		yh, err := y.Value.To(tensor.CPU)
		if err != nil {
			t.Fatal(err)
		}
		gh, err := in.Grad.To(tensor.CPU)
		if err != nil {
			t.Fatal(err)
		}
		return yh.Contiguous().Data(), gh.Contiguous().Data()
	}
	wantY, wantG := run(host, nil)
	a := nn.NewArena()
	for step := range 3 {
		a.Reset()
		y, g := run(onDev, a)
		for i := range wantY {
			if y[i] != wantY[i] {
				t.Fatalf("step %d: output %d = %g, want %g (CPU)", step, i, y[i], wantY[i])
			}
		}
		for i := range wantG {
			if g[i] != wantG[i] {
				t.Fatalf("step %d: input gradient %d = %g, want %g (CPU)", step, i, g[i], wantG[i])
			}
		}
	}
}

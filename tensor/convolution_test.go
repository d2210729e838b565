package tensor

import (
	"math"
	"testing"

	"github.com/duel-ssl/duel/kernels/conv"
)

// hostOperand returns the operand of the host slice d as a dense tensor of
// the given shape.
func hostOperand(d []float32, shape ...int) Operand {
	return FromSlice(d, len(d)).Reshape(shape...).Operand()
}

// randSlice returns n values in [-1, 1) from seed.
func randSlice(seed uint64, n int) []float32 {
	r := rng(seed)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(2*r.Float64() - 1)
	}
	return d
}

// naiveConv returns, in float64, the CNHW output of the convolution s of x
// (layout per s.ChannelMajor) by w, and the input and weight gradients for
// the output gradient dy (CNHW).
func naiveConv(s ConvShape, x, w, dy []float32) (y, dx, dw []float64) {
	oh, ow := s.OutH(), s.OutW()
	xi := func(n, c, i, j int) int {
		if s.ChannelMajor {
			return ((c*s.N+n)*s.H+i)*s.W + j
		}
		return ((n*s.In+c)*s.H+i)*s.W + j
	}
	y, dx, dw = make([]float64, s.Out*s.N*oh*ow), make([]float64, len(x)), make([]float64, len(w))
	for o := range s.Out {
		for n := range s.N {
			for a := range oh {
				for b := range ow {
					yi := ((o*s.N+n)*oh+a)*ow + b
					for c := range s.In {
						for ki := range s.K {
							for kj := range s.K {
								i, j := a*s.S+ki-s.P, b*s.S+kj-s.P
								if i < 0 || j < 0 || i >= s.H || j >= s.W {
									continue
								}
								wi := ((o*s.In+c)*s.K+ki)*s.K + kj
								y[yi] += float64(w[wi]) * float64(x[xi(n, c, i, j)])
								dx[xi(n, c, i, j)] += float64(w[wi]) * float64(dy[yi])
								dw[wi] += float64(x[xi(n, c, i, j)]) * float64(dy[yi])
							}
						}
					}
				}
			}
		}
	}
	return y, dx, dw
}

// TestCPUConvBackend checks the CPU's ConvBackend against a float64
// reference for each algorithm (WinogradBF16 within bfloat16's rounding),
// both input layouts and the bias, and that
// the input gradient is the same bits with or without what the forward
// pass kept.
func TestCPUConvBackend(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    ConvShape
		algo ConvAlgo
	}{
		{"im2col", ConvShape{N: 2, In: 3, Out: 5, H: 8, W: 8, K: 3, S: 1, P: 1}, conv.Im2col},
		{"winograd", ConvShape{N: 2, In: 3, Out: 5, H: 8, W: 8, K: 3, S: 1, P: 1}, conv.Winograd},
		{"winograd channel-major", ConvShape{N: 3, In: 4, Out: 2, H: 6, W: 6, K: 3, S: 1, P: 1, ChannelMajor: true}, conv.Winograd},
		{"winograd bf16", ConvShape{N: 3, In: 4, Out: 5, H: 7, W: 6, K: 3, S: 1, P: 1, ChannelMajor: true}, conv.WinogradBF16},
		{"direct", ConvShape{N: 2, In: 3, Out: 5, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}, conv.Direct},
		{"direct stride 2", ConvShape{N: 2, In: 3, Out: 4, H: 8, W: 8, K: 3, S: 2, P: 1, ChannelMajor: true}, conv.Direct},
		{"auto 1x1", ConvShape{N: 2, In: 4, Out: 3, H: 5, W: 5, K: 1, S: 1, P: 0, ChannelMajor: true}, conv.Auto},
		{"auto 7x7 stride 2", ConvShape{N: 2, In: 3, Out: 2, H: 9, W: 9, K: 7, S: 2, P: 3}, conv.Auto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			be := cpu{}
			al := be.ConvAlgos(s, tc.algo)
			tol := 1e-4
			if tc.algo == conv.WinogradBF16 { // a bf16 backend's choice, asked for directly
				al, tol = ConvAlgos{Forward: tc.algo, WeightGrad: tc.algo, InputGrad: tc.algo}, 0.1 // kernels/conv TestWinogradBF16 bounds the error tightly
			}
			if tc.algo != conv.Auto && al.Forward != tc.algo {
				t.Fatalf("ConvAlgos(%v) = %+v", tc.algo, al)
			}
			ny := s.Out * s.N * s.OutH() * s.OutW()
			x, w, dy, b := randSlice(1, s.N*s.In*s.H*s.W), randSlice(2, s.Out*s.In*s.K*s.K), randSlice(3, ny), randSlice(4, s.Out)
			y, dx, dx2, dw, db := make([]float32, ny), make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(w)), make([]float32, s.Out)
			xo, wo, dyo := hostOperand(x, len(x)), hostOperand(w, s.Out, s.In, s.K, s.K), hostOperand(dy, ny)
			saved := be.ConvForward(hostOperand(y, ny), xo, wo, hostOperand(b, s.Out), s, al, true)
			be.ConvInputGrad(hostOperand(dx, len(dx)), dyo, wo, s, al, saved, false)
			be.ConvInputGrad(hostOperand(dx2, len(dx2)), dyo, wo, s, al, nil, false)
			be.ConvWeightGrad(hostOperand(dw, len(dw)), dyo, xo, s, al, false)
			be.ConvBiasGrad(hostOperand(db, len(db)), dyo, s)
			wy, wdx, wdw := naiveConv(s, x, w, dy)
			plane := s.N * s.OutH() * s.OutW()
			for i := range wy {
				wy[i] += float64(b[i/plane])
			}
			wdb := make([]float64, s.Out)
			for i, v := range dy {
				wdb[i/plane] += float64(v)
			}
			for _, c := range []struct {
				name string
				got  []float32
				want []float64
			}{{"y", y, wy}, {"dx", dx, wdx}, {"dw", dw, wdw}, {"db", db, wdb}} {
				for i := range c.want {
					if d := math.Abs(float64(c.got[i]) - c.want[i]); d > tol*(1+math.Abs(c.want[i])) {
						t.Fatalf("%s[%d] = %g, want %g", c.name, i, c.got[i], c.want[i])
					}
				}
			}
			for i := range dx {
				if math.Float32bits(dx[i]) != math.Float32bits(dx2[i]) {
					t.Fatalf("dx[%d]: %g with the forward pass's kernels, %g without", i, dx[i], dx2[i])
				}
			}
		})
	}
}

// TestCPUBatchNormRunningStats checks the running statistics
// BatchNormTrain leaves (PyTorch's momentum rule over the mean of the
// groups' statistics, unbiased variance) and the statistics BatchNormEval
// writes.
func TestCPUBatchNormRunningStats(t *testing.T) {
	for _, g := range []BatchNormGeom{
		{N: 4, C: 3, S: 5, Splits: 1},
		{N: 4, C: 3, S: 5, Splits: 2, ChannelMajor: true},
	} {
		n := g.N * g.C * g.S
		x, y := randSlice(5, n), make([]float32, n)
		rm, rv := []float32{0.5, -1, 0}, []float32{1, 2, 0.25}
		rm0, rv0 := append([]float32(nil), rm...), append([]float32(nil), rv...)
		gamma, beta := []float32{1, 2, 3}, []float32{0, 0.5, -1}
		mean, invstd := make([]float32, g.Splits*g.C), make([]float32, g.Splits*g.C)
		a := BatchNormArgs{Y: hostOperand(y, n), X: hostOperand(x, n), Gamma: hostOperand(gamma, 3), Beta: hostOperand(beta, 3),
			RunningMean: hostOperand(rm, 3), RunningVar: hostOperand(rv, 3), Mean: hostOperand(mean, len(mean)), InvStd: hostOperand(invstd, len(invstd)),
			Eps: 1e-5, Momentum: 0.1}
		cpu{}.BatchNormTrain(g, a)
		ng := g.N / g.Splits
		for ch := range g.C {
			var bm, bv float64
			for grp := range g.Splits {
				var vals []float64
				for i := grp; i < g.N; i += g.Splits {
					p := i*g.C + ch
					if g.ChannelMajor {
						p = ch*g.N + i
					}
					for _, v := range x[p*g.S : (p+1)*g.S] {
						vals = append(vals, float64(v))
					}
				}
				var mu, sq float64
				for _, v := range vals {
					mu += v
				}
				mu /= float64(len(vals))
				for _, v := range vals {
					sq += (v - mu) * (v - mu)
				}
				bm += mu / float64(g.Splits)
				bv += sq / float64(ng*g.S-1) / float64(g.Splits)
			}
			wm, wv := 0.9*float64(rm0[ch])+0.1*bm, 0.9*float64(rv0[ch])+0.1*bv
			if math.Abs(float64(rm[ch])-wm) > 1e-6 || math.Abs(float64(rv[ch])-wv) > 1e-6 {
				t.Errorf("%+v channel %d: running %g, %g; want %g, %g", g, ch, rm[ch], rv[ch], wm, wv)
			}
		}
		g.Splits = 1
		cpu{}.BatchNormEval(g, a)
		for ch := range g.C {
			if mean[ch] != rm[ch] || math.Abs(float64(invstd[ch])-1/math.Sqrt(float64(rv[ch])+1e-5)) > 1e-6 {
				t.Errorf("eval channel %d: mean %g invstd %g, running %g %g", ch, mean[ch], invstd[ch], rm[ch], rv[ch])
			}
		}
	}
}

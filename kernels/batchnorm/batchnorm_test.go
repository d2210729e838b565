package batchnorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// toCM returns the channel-major copy of the sample-major activation x.
func toCM(x []float32, g Geom) []float32 {
	out := make([]float32, len(x))
	for i := range g.N {
		for ch := range g.C {
			copy(out[(ch*g.N+i)*g.S:][:g.S], x[(i*g.C+ch)*g.S:][:g.S])
		}
	}
	return out
}

// sameBits fails t when got and want differ in any bit.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func randn(r *rand.Rand, n int, scale, shift float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()*scale + shift)
	}
	return v
}

// TestPasses checks the statistics against float64 sums, the normalisation
// against its formula, and that both layouts, and StatsNormalize against
// Stats then Normalize, give the same bits in every pass.
func TestPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	for _, tc := range []struct{ n, c, s, splits int }{{4, 3, 5, 1}, {8, 2, 9, 2}, {6, 5, 17, 3}, {2, 4, 1, 1}, {12, 3, 40, 4}} {
		t.Run(fmt.Sprintf("n%d-c%d-s%d-splits%d", tc.n, tc.c, tc.s, tc.splits), func(t *testing.T) {
			g := Geom{N: tc.n, C: tc.c, S: tc.s, Splits: tc.splits}
			gc := g
			gc.ChannelMajor = true
			k := tc.splits * tc.c
			x := randn(r, tc.n*tc.c*tc.s, 2, 3)
			xc := toCM(x, g)
			gamma, beta := randn(r, tc.c, 1, 0), randn(r, tc.c, 1, 0)
			mean, invstd := make([]float32, k), make([]float32, k)
			bmean, bvar := make([]float64, tc.c), make([]float64, tc.c)
			Stats(g, 1e-5, x, mean, invstd, bmean, bvar)
			for grp := range tc.splits {
				for ch := range tc.c {
					var s, sq float64
					cnt := float64(tc.n / tc.splits * tc.s)
					for i := grp; i < tc.n; i += tc.splits {
						for _, v := range x[(i*tc.c+ch)*tc.s:][:tc.s] {
							s += float64(v)
						}
					}
					mu := s / cnt
					for i := grp; i < tc.n; i += tc.splits {
						for _, v := range x[(i*tc.c+ch)*tc.s:][:tc.s] {
							sq += (float64(v) - mu) * (float64(v) - mu)
						}
					}
					is := 1 / math.Sqrt(sq/cnt+1e-5)
					if q := grp*tc.c + ch; math.Abs(float64(mean[q])-mu) > 1e-5*math.Abs(mu)+1e-6 || math.Abs(float64(invstd[q])-is) > 1e-4*is {
						t.Fatalf("group %d channel %d: mean %v invstd %v, want %v %v", grp, ch, mean[q], invstd[q], mu, is)
					}
				}
			}
			meanC, invstdC := make([]float32, k), make([]float32, k)
			bmeanC, bvarC := make([]float64, tc.c), make([]float64, tc.c)
			Stats(gc, 1e-5, xc, meanC, invstdC, bmeanC, bvarC)
			sameBits(t, "mean", meanC, mean)
			sameBits(t, "invstd", invstdC, invstd)
			for ch := range tc.c {
				if bmeanC[ch] != bmean[ch] || bvarC[ch] != bvar[ch] {
					t.Fatalf("channel %d: batch statistics differ between layouts", ch)
				}
			}
			res := randn(r, len(x), 1, 0)
			resC := toCM(res, g)
			for _, v := range []struct {
				res  bool
				relu bool
			}{{false, false}, {false, true}, {true, false}, {true, true}} {
				var rs, rsC []float32
				if v.res {
					rs, rsC = res, resC
				}
				y, yc, yf := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
				Normalize(g, x, y, rs, mean, invstd, gamma, beta, v.relu)
				Normalize(gc, xc, yc, rsC, mean, invstd, gamma, beta, v.relu)
				StatsNormalize(gc, 1e-5, xc, yf, rsC, meanC, invstdC, gamma, beta, bmeanC, bvarC, v.relu)
				sameBits(t, "y channel-major", yc, toCM(y, g))
				sameBits(t, "StatsNormalize", yf, yc)
				for p := range tc.n * tc.c {
					i, ch := p/tc.c, p%tc.c
					q := (i%tc.splits)*tc.c + ch
					for j := range tc.s {
						e := p*tc.s + j
						want := (float64(x[e])-float64(mean[q]))*float64(invstd[q])*float64(gamma[ch]) + float64(beta[ch])
						if v.res {
							want += float64(res[e])
						}
						if v.relu {
							want = math.Max(want, 0)
						}
						if math.Abs(float64(y[e])-want) > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("%+v: y[%d] = %v, want %v", v, e, y[e], want)
						}
					}
				}
			}
			// Backward in both layouts, every combination of mask,
			// residual, statistics and accumulation.
			dy, mask := randn(r, len(x), 1, 0), randn(r, len(x), 1, 0)
			old := randn(r, len(x), 1, 0)
			oldW := randn(r, tc.c, 1, 0)
			for _, masked := range []bool{false, true} {
				for _, training := range []bool{false, true} {
					for _, acc := range []bool{false, true} {
						run := func(gg Geom, conv func([]float32) []float32) *Grad {
							a := &Grad{X: conv(x), DY: conv(dy), Mean: mean, InvStd: invstd, Gamma: gamma, Training: training,
								DX: conv(old), DRes: conv(old), DGamma: append([]float32(nil), oldW...), DBeta: append([]float32(nil), oldW...),
								AccDX: acc, AccDRes: acc, AccDGamma: acc, AccDBeta: acc}
							if masked {
								a.Mask = conv(mask)
							}
							Backward(nil, gg, a)
							return a
						}
						a := run(g, func(v []float32) []float32 { return append([]float32(nil), v...) })
						b := run(gc, func(v []float32) []float32 { return toCM(v, g) })
						name := fmt.Sprintf("masked %v training %v acc %v", masked, training, acc)
						sameBits(t, name+": dx", b.DX, toCM(a.DX, g))
						sameBits(t, name+": dres", b.DRes, toCM(a.DRes, g))
						sameBits(t, name+": dgamma", b.DGamma, a.DGamma)
						sameBits(t, name+": dbeta", b.DBeta, a.DBeta)
						// Without the residual's gradient the passes read dy
						// and the mask, not the masked dy the residual pass
						// wrote: the same bits.
						for _, tc := range []struct {
							gg   Geom
							conv func([]float32) []float32
							with *Grad
						}{{g, func(v []float32) []float32 { return append([]float32(nil), v...) }, a}, {gc, func(v []float32) []float32 { return toCM(v, g) }, b}} {
							c := &Grad{X: tc.conv(x), DY: tc.conv(dy), Mask: tc.with.Mask, Mean: mean, InvStd: invstd, Gamma: gamma, Training: training,
								DX: tc.conv(old), DGamma: append([]float32(nil), oldW...), DBeta: append([]float32(nil), oldW...),
								AccDX: acc, AccDGamma: acc, AccDBeta: acc}
							Backward(nil, tc.gg, c)
							sameBits(t, name+" without dres: dx", c.DX, tc.with.DX)
							sameBits(t, name+" without dres: dgamma", c.DGamma, tc.with.DGamma)
							sameBits(t, name+" without dres: dbeta", c.DBeta, tc.with.DBeta)
						}
					}
				}
			}
		})
	}
}

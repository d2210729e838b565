package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/scratch"
)

// The absolute values of Winograd F(2x2, 3x3)'s matrices (winograd.go).
var (
	absBT = [4][4]float64{{1, 0, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 0, 1}}
	absG  = [4][3]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}, {0, 0, 1}}
	absAT = [2][4]float64{{1, 1, 1, 0}, {0, 1, 1, 1}}
)

// winoAbsInput returns |B^T| |d| |B| for the 4x4 tile d.
func winoAbsInput(d [4][4]float64) (v [4][4]float64) {
	for r := range 4 {
		for c := range 4 {
			for p := range 4 {
				for q := range 4 {
					v[r][c] += absBT[r][p] * d[p][q] * absBT[c][q]
				}
			}
		}
	}
	return v
}

// winoAbsKernel returns |G| |k| |G^T| for the 3x3 kernel k.
func winoAbsKernel(k [3][3]float64) (u [4][4]float64) {
	for r := range 4 {
		for c := range 4 {
			for a := range 3 {
				for b := range 3 {
					u[r][c] += absG[r][a] * k[a][b] * absG[c][b]
				}
			}
		}
	}
	return u
}

// winoAbsConv returns, for each output of the 3x3 stride-1 padding-1
// convolution of in (cin maps of h x w per image, at(n, c, i, j) their
// absolute values, zero outside) by the kernels |k(co, ci)|, the scale of
// the rounding errors of a Winograd F(2x2, 3x3) that rounds the factors of
// its products: |A^T| (sum over ci of |U| ⊙ |V|) |A|, with |U| and |V| the
// transforms by the matrices' absolute values, which bound those of the
// transformed values. The result is channel-major (cout, n, h, w).
func winoAbsConv(n, cin, cout, h, w int, at func(n, c, i, j int) float64, k func(co, ci int) [3][3]float64) []float64 {
	out := make([]float64, cout*n*h*w)
	us := make([][4][4]float64, cout*cin)
	for co := range cout {
		for ci := range cin {
			us[co*cin+ci] = winoAbsKernel(k(co, ci))
		}
	}
	vs := make([][4][4]float64, cin)
	for img := range n {
		for ti := 0; ti < h; ti += 2 {
			for tj := 0; tj < w; tj += 2 {
				for ci := range cin {
					var d [4][4]float64
					for p := range 4 {
						for q := range 4 {
							if i, j := ti-1+p, tj-1+q; i >= 0 && i < h && j >= 0 && j < w {
								d[p][q] = at(img, ci, i, j)
							}
						}
					}
					vs[ci] = winoAbsInput(d)
				}
				for co := range cout {
					var m [4][4]float64
					for ci := range cin {
						u := &us[co*cin+ci]
						for r := range 4 {
							for c := range 4 {
								m[r][c] += u[r][c] * vs[ci][r][c]
							}
						}
					}
					for a := range 2 {
						for b := range 2 {
							i, j := ti+a, tj+b
							if i >= h || j >= w {
								continue
							}
							var y float64
							for r := range 4 {
								for c := range 4 {
									y += absAT[a][r] * m[r][c] * absAT[b][c]
								}
							}
							out[((co*n+img)*h+i)*w+j] = y
						}
					}
				}
			}
		}
	}
	return out
}

// winoAbsWeightGrad returns the scale of the rounding errors of the
// Winograd weight gradient of s (the adjoint pipeline): |G^T| (sum over
// the tiles of |A| |dy| |A^T| ⊙ |V|) |G| for each (co, ci).
func winoAbsWeightGrad(s Shape, x, dy []float32) []float64 {
	g := s.geom()
	out := make([]float64, g.cout*g.cin*9)
	du := make([][4][4]float64, g.cout*g.cin)
	vs := make([][4][4]float64, g.cin)
	for img := range g.n {
		off, cs := g.image(img)
		for ti := 0; ti < g.h; ti += 2 {
			for tj := 0; tj < g.w; tj += 2 {
				for ci := range g.cin {
					var d [4][4]float64
					for p := range 4 {
						for q := range 4 {
							if i, j := ti-1+p, tj-1+q; i >= 0 && i < g.h && j >= 0 && j < g.w {
								d[p][q] = math.Abs(float64(x[off+ci*cs+i*g.w+j]))
							}
						}
					}
					vs[ci] = winoAbsInput(d)
				}
				for co := range g.cout {
					var m [4][4]float64 // |A| |dy tile| |A^T|
					for a := range 2 {
						for b := range 2 {
							i, j := ti+a, tj+b
							if i >= g.h || j >= g.w {
								continue
							}
							v := math.Abs(float64(dy[((co*g.n+img)*g.h+i)*g.w+j]))
							for r := range 4 {
								for c := range 4 {
									m[r][c] += absAT[a][r] * v * absAT[b][c]
								}
							}
						}
					}
					for ci := range g.cin {
						d := &du[co*g.cin+ci]
						for r := range 4 {
							for c := range 4 {
								d[r][c] += m[r][c] * vs[ci][r][c]
							}
						}
					}
				}
			}
		}
	}
	for i, d := range du {
		for a := range 3 {
			for b := range 3 {
				for r := range 4 {
					for c := range 4 {
						out[i*9+a*3+b] += absG[r][a] * d[r][c] * absG[c][b]
					}
				}
			}
		}
	}
	return out
}

// TestWinogradBF16 runs the three WinogradBF16 passes (whole batches and
// chunks of images, both input layouts, odd map sizes, zero sizes,
// storing and accumulating), and float32 Winograd's beside them, against the float64 convolution of the unrounded factors.
// Rounding the transformed factors to bfloat16 (unit roundoff 2^-8) puts
// at most (2^-7 + 2^-16) times the error scale of winoAbsConv (or
// winoAbsWeightGrad) on each result, plus float32 rounding; the passes
// must also differ from float32 Winograd's, which shows that they round.
func TestWinogradBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	cases := []Shape{
		{N: 2, In: 3, Out: 5, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 3, In: 4, Out: 6, H: 7, W: 9, K: 3, S: 1, P: 1},                        // sample-major, odd maps
		{N: 1, In: 1, Out: 1, H: 1, W: 1, K: 3, S: 1, P: 1, ChannelMajor: true},    // one position
		{N: 2, In: 9, Out: 7, H: 5, W: 3, K: 3, S: 1, P: 1, ChannelMajor: true},    // odd channels (pairing)
		{N: 40, In: 6, Out: 5, H: 12, W: 12, K: 3, S: 1, P: 1, ChannelMajor: true}, // 1440 tiles: chunks of images
		{N: 4, In: 33, Out: 17, H: 4, W: 4, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 0, In: 3, Out: 4, H: 4, W: 4, K: 3, S: 1, P: 1, ChannelMajor: true}, // zero sizes
		{N: 2, In: 0, Out: 4, H: 4, W: 4, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 2, In: 3, Out: 0, H: 4, W: 4, K: 3, S: 1, P: 1, ChannelMajor: true},
		{N: 2, In: 3, Out: 4, H: 0, W: 4, K: 3, S: 1, P: 1},
	}
	for _, s := range cases {
		t.Run(fmt.Sprintf("%d-%d-n%d-%dx%d-cm%v", s.In, s.Out, s.N, s.H, s.W, s.ChannelMajor), func(t *testing.T) {
			g := s.geom()
			w := randSlice(r, s.Out*s.In*9)
			x := randSlice(r, s.N*s.In*s.H*s.W)
			dy := randSlice(r, s.Out*s.N*s.H*s.W)
			exact := convRefWith(s, w, x, dy, func(v float32) float64 { return float64(v) })
			absX := func(n, c, i, j int) float64 {
				off, cs := g.image(n)
				return math.Abs(float64(x[off+c*cs+i*g.w+j]))
			}
			absDy := func(n, c, i, j int) float64 { return math.Abs(float64(dy[((c*g.n+n)*g.h+i)*g.w+j])) }
			kernel := func(co, ci int, flip bool) (k [3][3]float64) {
				for a := range 3 {
					for b := range 3 {
						if flip {
							k[a][b] = math.Abs(float64(w[((ci*s.In+co)*3+2-a)*3+2-b]))
						} else {
							k[a][b] = math.Abs(float64(w[((co*s.In+ci)*3+a)*3+b]))
						}
					}
				}
				return k
			}
			yScale := winoAbsConv(s.N, s.In, s.Out, s.H, s.W, absX, func(co, ci int) [3][3]float64 { return kernel(co, ci, false) })
			dxScaleCM := winoAbsConv(s.N, s.Out, s.In, s.H, s.W, absDy, func(ci, co int) [3][3]float64 { return kernel(ci, co, true) })
			dxScale := make([]float64, len(x)) // in x's layout
			for c := range s.In {
				for n := range s.N {
					off, cs := g.image(n)
					copy(dxScale[off+c*cs:off+c*cs+s.H*s.W], dxScaleCM[(c*s.N+n)*s.H*s.W:])
				}
			}
			dwScale := winoAbsWeightGrad(s, x, dy)
			sc := new(scratch.Free)
			u := make([]float32, WinogradKernelsLen(s.Out, s.In))
			WinogradKernels(u, w, s.Out, s.In)
			for _, acc := range []bool{false, true} {
				y, y32 := randSlice(r, len(exact.y)), randSlice(r, len(exact.y)) // stored over
				WinogradForwardBF16(sc, s, u, x, y)
				WinogradForward(sc, s, u, x, y32)
				nearWinoBF16(t, "y", y, y32, exact.y, yScale, s.In, !g.empty())
				dw0 := randSlice(r, len(w))
				dwWant, dwSc := accumulated(exact.dw, dwScale, dw0, acc)
				dw, dw32 := append([]float32(nil), dw0...), append([]float32(nil), dw0...)
				WinogradWeightGradBF16(sc, s, x, dy, dw, acc)
				WinogradWeightGrad(sc, s, x, dy, dw32, acc)
				nearWinoBF16(t, "dw", dw, dw32, dwWant, dwSc, s.N*s.H*s.W, !g.empty())
				dx0 := randSlice(r, len(x))
				dxWant, dxSc := accumulated(exact.dx, dxScale, dx0, acc)
				dx, dx32 := append([]float32(nil), dx0...), append([]float32(nil), dx0...)
				WinogradInputGradBF16(sc, s, u, dy, dx, acc)
				WinogradInputGrad(sc, s, u, dy, dx32, acc)
				nearWinoBF16(t, "dx", dx, dx32, dxWant, dxSc, s.Out, !g.empty())
			}
		})
	}
}

// nearWinoBF16 fails the test where got is farther from want than
// WinogradBF16's rounding allows (see TestWinogradBF16; k is the length
// of the float32 sums), or where got equals the float32 pass's result
// fp32 everywhere although the pass rounds (rounds: it has products);
// fp32 must be within the bound too.
func nearWinoBF16(t *testing.T, name string, got, fp32 []float32, want, scale []float64, k int, rounds bool) {
	t.Helper()
	bad, same := 0, true
	for i, w := range want {
		tol := (0x1p-7+0x1p-16)*scale[i] + float64(k+32)*0x1p-23*scale[i] + 1e-30
		if d := math.Abs(float64(got[i]) - w); !(d <= tol) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %g, want %g (error %.3g, bound %.3g)", name, i, got[i], w, d, tol)
			}
		}
		if d := math.Abs(float64(fp32[i]) - w); !(d <= tol) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %g in float32 Winograd, want %g (error %.3g, bound %.3g)", name, i, fp32[i], w, d, tol)
			}
		}
		same = same && got[i] == fp32[i]
	}
	if bad > 5 {
		t.Fatalf("%s: %d mismatches", name, bad)
	}
	if same && rounds && len(want) > 4 {
		t.Errorf("%s: the bfloat16 pass gave float32 Winograd's results: nothing rounded", name)
	}
}

// TestWinogradBF16ErrorSize measures what the documentation states: on
// random operands WinogradBF16's relative RMS error against the exact
// convolution is under twice Im2colBF16's (0.0041 against 0.0024 in each
// pass at this shape), while float32 Winograd's stays at float32's level.
func TestWinogradBF16ErrorSize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	s := Shape{N: 4, In: 64, Out: 32, H: 8, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	w, x, dy := randSlice(r, s.Out*s.In*9), randSlice(r, s.N*s.In*64), randSlice(r, s.Out*s.N*64)
	exact := convRefWith(s, w, x, dy, func(v float32) float64 { return float64(v) })
	rms := func(got []float32, want []float64) float64 {
		var e, n float64
		for i := range want {
			d := float64(got[i]) - want[i]
			e, n = e+d*d, n+want[i]*want[i]
		}
		return math.Sqrt(e / n)
	}
	sc := new(scratch.Free)
	u := make([]float32, WinogradKernelsLen(s.Out, s.In))
	WinogradKernels(u, w, s.Out, s.In)
	type passes struct{ y, dw, dx []float32 }
	run := func(fwd func(y []float32), wgrad func(dw []float32), igrad func(dx []float32)) [3]float64 {
		p := passes{make([]float32, len(exact.y)), make([]float32, len(w)), make([]float32, len(x))}
		fwd(p.y)
		wgrad(p.dw)
		igrad(p.dx)
		return [3]float64{rms(p.y, exact.y), rms(p.dw, exact.dw), rms(p.dx, exact.dx)}
	}
	im2col := run(func(y []float32) { Im2colForwardBF16(sc, s, w, x, y) },
		func(dw []float32) { Im2colWeightGradBF16(sc, s, x, dy, dw, false) },
		func(dx []float32) { Im2colInputGradBF16(sc, s, w, dy, dx, false) })
	wino := run(func(y []float32) { WinogradForwardBF16(sc, s, u, x, y) },
		func(dw []float32) { WinogradWeightGradBF16(sc, s, x, dy, dw, false) },
		func(dx []float32) { WinogradInputGradBF16(sc, s, u, dy, dx, false) })
	wino32 := run(func(y []float32) { WinogradForward(sc, s, u, x, y) },
		func(dw []float32) { WinogradWeightGrad(sc, s, x, dy, dw, false) },
		func(dx []float32) { WinogradInputGrad(sc, s, u, dy, dx, false) })
	for i, pass := range []string{"forward", "weight gradient", "input gradient"} {
		if ratio := wino[i] / im2col[i]; !(ratio >= 1 && ratio < 2) {
			t.Errorf("%s: relative RMS error %.3g, Im2colBF16's %.3g: ratio %.2f, want in [1, 2)", pass, wino[i], im2col[i], ratio)
		}
		if wino32[i] > 1e-6 {
			t.Errorf("%s: float32 Winograd's relative RMS error %.3g, want float32's level", pass, wino32[i])
		}
	}
}

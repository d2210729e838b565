package cuda

import (
	"fmt"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// convGeom is the geometry parameters of conv.cu's kernels.
type convGeom struct{ n, c, h, w, o, k, s, p, oh, ow int }

// xIndex returns the index of x[img, c, y, x] in the NCHW input, or the
// CNHW one when cm.
func (g convGeom) xIndex(cm bool, img, c, y, x int) int {
	if cm {
		return ((c*g.n+img)*g.h+y)*g.w + x
	}
	return ((img*g.c+c)*g.h+y)*g.w + x
}

// eachTap calls f for every tap (i, j), in increasing order, through
// which input position (y, x) reaches an output position (oy, ox):
// oy*s = y+p-i and ox*s = x+p-j inside the output.
func (g convGeom) eachTap(y, x int, f func(i, j, oy, ox int)) {
	for i := range g.k {
		for j := range g.k {
			sy, sx := y+g.p-i, x+g.p-j
			if sy < 0 || sx < 0 || sy%g.s != 0 || sx%g.s != 0 || sy/g.s >= g.oh || sx/g.s >= g.ow {
				continue
			}
			f(i, j, sy/g.s, sx/g.s)
		}
	}
}

// setInputs sets (adds to, when acc: old value first) every element of
// dx, an input-shaped tensor (CNHW when cm), to sum(img, c, y, x).
func (g convGeom) setInputs(dx []float32, cm, acc bool, sum func(img, c, y, x int) float32) {
	for img := range g.n {
		for c := range g.c {
			for y := range g.h {
				for x := range g.w {
					s, at := sum(img, c, y, x), g.xIndex(cm, img, c, y, x)
					if acc {
						s = dx[at] + s
					}
					dx[at] = s
				}
			}
		}
	}
}

// geomArgs reads the 11 geometry parameters starting at parameter i.
func geomArgs(a cudatest.Args, i int) (convGeom, bool) {
	v := func(j int) int { return int(a.Int32(i + j)) }
	return convGeom{v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7), v(8), v(9)}, v(10) != 0
}

// registerConvKernels gives h Go versions of conv.cu's kernels: plain
// loops over the definitions in conv.cu's comments, accumulating in
// float32 in the kernels' order along each sum.
func registerConvKernels(h *cudatest.Host) {
	// The wide kernels compute the same sums in the same order (conv.cu,
	// "Wide tiles"): one Go version serves both names.
	both := func(name string, k cudatest.Kernel) {
		h.Register(name+"_f32", k)
		h.Register(name+"_wide_f32", k)
	}
	both("conv_fwd", func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		y, x, w := h.F32(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2))
		hasBias := a.Int32(4) != 0
		g, cm := geomArgs(a, 5)
		cols := g.n * g.oh * g.ow
		for o := range g.o {
			for p := range cols {
				img, q := p/(g.oh*g.ow), p%(g.oh*g.ow)
				oy, ox := q/g.ow, q%g.ow
				var s float32
				for c := range g.c {
					for i := range g.k {
						for j := range g.k {
							yy, xx := oy*g.s+i-g.p, ox*g.s+j-g.p
							if yy >= 0 && yy < g.h && xx >= 0 && xx < g.w {
								s += w[((o*g.c+c)*g.k+i)*g.k+j] * x[g.xIndex(cm, img, c, yy, xx)]
							}
						}
					}
				}
				if hasBias {
					s += h.F32(a.Ptr(3))[o]
				}
				y[o*cols+p] = s
			}
		}
		return nil
	})
	both("conv_dgrad", func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		dx, dy, w := h.F32(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2))
		acc := a.Int32(3) != 0
		g, cm := geomArgs(a, 4)
		ocols := g.n * g.oh * g.ow
		g.setInputs(dx, cm, acc, func(img, c, yy, xx int) (s float32) {
			for o := range g.o {
				g.eachTap(yy, xx, func(i, j, oy, ox int) {
					s += w[((o*g.c+c)*g.k+i)*g.k+j] * dy[o*ocols+(img*g.oh+oy)*g.ow+ox]
				})
			}
			return s
		})
		return nil
	})
	both("conv_wgrad", func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		out, dy, x := h.F32(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2))
		acc, chunk := a.Int32(3) != 0, int(a.Int32(4))
		g, cm := geomArgs(a, 5)
		cols, r := g.n*g.oh*g.ow, g.c*g.k*g.k
		for z := range cfg.Grid.Z {
			part := out[z*g.o*r:]
			for o := range g.o {
				for c := range g.c {
					for i := range g.k {
						for j := range g.k {
							var s float32
							for p := z * chunk; p < min(cols, (z+1)*chunk); p++ {
								img, q := p/(g.oh*g.ow), p%(g.oh*g.ow)
								yy, xx := q/g.ow*g.s+i-g.p, q%g.ow*g.s+j-g.p
								if yy >= 0 && yy < g.h && xx >= 0 && xx < g.w {
									s += dy[o*cols+p] * x[g.xIndex(cm, img, c, yy, xx)]
								}
							}
							at := o*r + (c*g.k+i)*g.k + j
							if acc {
								s += part[at]
							}
							part[at] = s
						}
					}
				}
			}
		}
		return nil
	})
	h.Register("conv_wgrad_reduce_f32", func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		dw, part := h.F32(a.Ptr(0)), h.F32(a.Ptr(1))
		splits, n, acc := int(a.Int32(2)), int(a.Int64(3)), a.Int32(4) != 0
		for e := range n {
			var s float32
			for z := range splits {
				s += part[z*n+e]
			}
			if acc {
				s += dw[e]
			}
			dw[e] = s
		}
		return nil
	})
	h.Register("conv_wt_f32", func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		// The blocks' tiles, as the launch configuration lays them out.
		wt, w := h.F32(a.Ptr(0)), h.F32(a.Ptr(1))
		o, c, kk, tile := int(a.Int32(2)), int(a.Int32(3)), int(a.Int32(4)), int(a.Int32(5))
		if cfg.Block.X != 256 || cfg.Shared != 4*tile*(tile*kk+1) {
			return fmt.Errorf("conv_wt_f32: %d threads, %d bytes of shared memory; want 256, %d", cfg.Block.X, cfg.Shared, 4*tile*(tile*kk+1))
		}
		for by := range cfg.Grid.Y {
			for bx := range cfg.Grid.X {
				for oi := by * tile; oi < min(by*tile+tile, o); oi++ {
					for ci := bx * tile; ci < min(bx*tile+tile, c); ci++ {
						for t := range kk {
							wt[(ci*o+oi)*kk+t] = w[(oi*c+ci)*kk+t]
						}
					}
				}
			}
		}
		return nil
	})
	col2im := func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		dx, dcol := h.F32(a.Ptr(0)), h.F32(a.Ptr(1))
		acc := a.Int32(2) != 0
		g, cm := geomArgs(a, 3)
		ocols := g.n * g.oh * g.ow
		g.setInputs(dx, cm, acc, func(img, c, yy, xx int) (s float32) {
			g.eachTap(yy, xx, func(i, j, oy, ox int) {
				s += dcol[((c*g.k+i)*g.k+j)*ocols+(img*g.oh+oy)*g.ow+ox]
			})
			return s
		})
		return nil
	}
	h.Register("conv_col2im_f32", col2im)
	for t := 1; t <= col2imMaxTaps; t++ {
		// The same sums in the same order (TestConvCol2imTapsEmulated), on
		// a grid that covers the map: a thread a position, 256 a block.
		h.Register(fmt.Sprintf("conv_col2im_taps%d_f32", t), func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
			g, _ := geomArgs(a, 3)
			if hw := g.h * g.w; cfg.Block.X != 256 || cfg.Grid.X*256 < hw || cfg.Grid.Y < 1 || (g.k+g.s-1)/g.s > t {
				return fmt.Errorf("conv_col2im_taps%d_f32: %+v for a %d x %d map, %d taps at stride %d", t, cfg, g.h, g.w, g.k, g.s)
			}
			return col2im(h, cfg, a)
		})
	}
	h.Register("conv_bias_grad_f32", func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		db, dy := h.F32(a.Ptr(0)), h.F32(a.Ptr(1))
		rows, n := int(a.Int32(2)), int(a.Int64(3))
		for r := range rows {
			var s float64
			for _, v := range dy[r*n : (r+1)*n] {
				s += float64(v)
			}
			db[r] = float32(float64(db[r]) + s)
		}
		return nil
	})
}

package cuda

import (
	"math"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
)

// bnHostGeom are the geometry parameters N, C, S, splits, cm of
// batchnorm.cu's kernels, read from parameter i on.
type bnHostGeom struct{ n, c, s, splits, cm int }

func bnHostGeomAt(a cudatest.Args, i int) bnHostGeom {
	return bnHostGeom{int(a.Int32(i)), int(a.Int32(i + 1)), int(a.Int32(i + 2)), int(a.Int32(i + 3)), int(a.Int32(i + 4))}
}

// plane returns the memory plane of sample i, channel ch.
func (g bnHostGeom) plane(i, ch int) int {
	if g.cm != 0 {
		return ch*g.n + i
	}
	return i*g.c + ch
}

// coords returns the sample and channel of element e.
func (g bnHostGeom) coords(e int) (i, ch int) {
	p := e / g.s
	if g.cm != 0 {
		return p % g.n, p / g.n
	}
	return p / g.c, p % g.c
}

// elem returns the memory index of element e of group grp, channel ch.
func (g bnHostGeom) elem(e, grp, ch int) int {
	return g.plane(grp+e/g.s*g.splits, ch)*g.s + e%g.s
}

// part calls f with the memory index of every element of part q of parts
// of group grp, channel ch (batchnorm.cu's bn_part_range: ceil(cnt/parts)
// rounded up to a multiple of 4).
func (g bnHostGeom) part(grp, ch, q, parts int, f func(at int)) {
	cnt := g.n / g.splits * g.s
	chunk := ((cnt+parts-1)/parts + 3) &^ 3
	lo := min(q*chunk, cnt)
	for e := lo; e < min(lo+chunk, cnt); e++ {
		f(g.elem(e, grp, ch))
	}
}

// shift returns the first element of group grp, channel ch (0 when empty).
func (g bnHostGeom) shift(x []float32, grp, ch int) float64 {
	if g.n/g.splits*g.s == 0 {
		return 0
	}
	return float64(x[g.elem(0, grp, ch)])
}

// bnHostKernels are batchnorm.cu's kernels transcribed to Go for a
// cudatest.Host, with the launch parameters of kernels/cuda's generated
// launchers.
var bnHostKernels = map[string]cudatest.Kernel{
	"bn_stats_f32": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		part, x := h.F64(a.Ptr(0)), h.F32(a.Ptr(1))
		g, parts := bnHostGeomAt(a, 2), cfg.Grid.Z
		for grp := range g.splits {
			for ch := range g.c {
				shift := g.shift(x, grp, ch)
				for q := range parts {
					var s1, s2 float64
					g.part(grp, ch, q, parts, func(at int) { d := float64(x[at]) - shift; s1 += d; s2 += d * d })
					at := 2 * ((grp*g.c+ch)*parts + q)
					part[at], part[at+1] = s1, s2
				}
			}
		}
		return nil
	},
	"bn_stats_finish_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		mean, invstd, rm, rv := h.F32(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2)), h.F32(a.Ptr(3))
		part, x := h.F64(a.Ptr(4)), h.F32(a.Ptr(5))
		g, parts, eps, m := bnHostGeomAt(a, 6), int(a.Int32(11)), a[12].(float64), a[13].(float64)
		cnt := float64(g.n / g.splits * g.s)
		for ch := range g.c {
			var bm, bv float64
			for grp := range g.splits {
				k := grp*g.c + ch
				var s1, s2 float64
				for q := range parts {
					s1 += part[2*(k*parts+q)]
					s2 += part[2*(k*parts+q)+1]
				}
				d := s1 / cnt
				v := max(s2/cnt-d*d, 0)
				mu := g.shift(x, grp, ch) + d
				mean[k], invstd[k] = float32(mu), float32(1/math.Sqrt(v+eps))
				bm += mu / float64(g.splits)
				bv += v * cnt / (cnt - 1) / float64(g.splits)
			}
			rm[ch] = float32((1-m)*float64(rm[ch]) + m*bm)
			rv[ch] = float32((1-m)*float64(rv[ch]) + m*bv)
		}
		if a.Int32(15) != 0 {
			h.F32(a.Ptr(14))[0]++
		}
		return nil
	},
	"bn_eval_stats_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		mean, invstd, rm, rv := h.F32(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2)), h.F32(a.Ptr(3))
		c, eps := int(a.Int32(4)), a[5].(float64)
		for ch := range c {
			mean[ch], invstd[ch] = rm[ch], float32(1/math.Sqrt(float64(rv[ch])+eps))
		}
		return nil
	},
	"bn_normalize_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		y, x, res := h.F32(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2))
		mean, invstd, gamma, beta := h.F32(a.Ptr(3)), h.F32(a.Ptr(4)), h.F32(a.Ptr(5)), h.F32(a.Ptr(6))
		g, hasRes, relu := bnHostGeomAt(a, 7), a.Int32(12) != 0, a.Int32(13) != 0
		for e := range g.n * g.c * g.s {
			i, ch := g.coords(e)
			k := (i%g.splits)*g.c + ch
			v := (x[e]-mean[k])*(invstd[k]*gamma[ch]) + beta[ch]
			if hasRes {
				v += res[e]
			}
			if relu {
				v = max(v, 0)
			}
			y[e] = v
		}
		return nil
	},
	"bn_back_sums_f32": func(h *cudatest.Host, cfg kc.Config, a cudatest.Args) error {
		part, x, dy, mask, mean := h.F64(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2)), h.F32(a.Ptr(3)), h.F32(a.Ptr(4))
		g, hasMask, parts := bnHostGeomAt(a, 5), a.Int32(10) != 0, cfg.Grid.Z
		for grp := range g.splits {
			for ch := range g.c {
				k := grp*g.c + ch
				for q := range parts {
					var s, sx float64
					g.part(grp, ch, q, parts, func(at int) {
						if hasMask && !(mask[at] > 0) {
							return
						}
						s += float64(dy[at])
						sx += float64(dy[at]) * (float64(x[at]) - float64(mean[k]))
					})
					part[2*(k*parts+q)], part[2*(k*parts+q)+1] = s, sx
				}
			}
		}
		return nil
	},
	"bn_back_sums_finish_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		sums, dgamma, dbeta, part, invstd := h.F64(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2)), h.F64(a.Ptr(3)), h.F32(a.Ptr(4))
		c, splits, parts := int(a.Int32(5)), int(a.Int32(6)), int(a.Int32(7))
		for ch := range c {
			var sg, sb float64
			for grp := range splits {
				k := grp*c + ch
				var s, sx float64
				for q := range parts {
					s += part[2*(k*parts+q)]
					sx += part[2*(k*parts+q)+1]
				}
				sums[2*k], sums[2*k+1] = s, sx*float64(invstd[k])
				sb += sums[2*k]
				sg += sums[2*k+1]
			}
			if a.Int32(8) != 0 {
				if a.Int32(9) == 0 {
					dgamma[ch] = 0
				}
				dgamma[ch] += float32(sg)
			}
			if a.Int32(10) != 0 {
				if a.Int32(11) == 0 {
					dbeta[ch] = 0
				}
				dbeta[ch] += float32(sb)
			}
		}
		return nil
	},
	"bn_back_dx_f32": func(h *cudatest.Host, _ kc.Config, a cudatest.Args) error {
		dx, dres, x, dy, mask := h.F32(a.Ptr(0)), h.F32(a.Ptr(1)), h.F32(a.Ptr(2)), h.F32(a.Ptr(3)), h.F32(a.Ptr(4))
		mean, invstd, gamma, sums := h.F32(a.Ptr(5)), h.F32(a.Ptr(6)), h.F32(a.Ptr(7)), h.F64(a.Ptr(8))
		g := bnHostGeomAt(a, 9)
		hasMask, training, doDX, accDX, doDRes, accDRes := a.Int32(14) != 0, a.Int32(15) != 0, a.Int32(16) != 0, a.Int32(17) != 0, a.Int32(18) != 0, a.Int32(19) != 0
		cnt := float32(g.n / g.splits * g.s)
		for e := range g.n * g.c * g.s {
			gv := dy[e]
			if hasMask && !(mask[e] > 0) {
				gv = 0
			}
			if doDRes {
				if accDRes {
					dres[e] += gv
				} else {
					dres[e] = gv
				}
			}
			if !doDX {
				continue
			}
			i, ch := g.coords(e)
			k := (i%g.splits)*g.c + ch
			is := invstd[k]
			scale := gamma[ch] * is
			v := scale * gv
			if training {
				mdy, mdyx := float32(sums[2*k])/cnt, float32(sums[2*k+1])/cnt
				v = scale * (gv - mdy - (x[e]-mean[k])*is*mdyx)
			}
			if accDX {
				v += dx[e]
			}
			dx[e] = v
		}
		return nil
	},
}

// TestBatchNormOnHost runs the BatchNorm tests on the backend's Go code
// with batchnorm.cu's kernels transcribed to Go (cudatest.Host): the
// operands, offsets, scratch and launch parameters, on every go test.
func TestBatchNormOnHost(t *testing.T) {
	b, err := newBackend(layerHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	testBatchNorm(t, b)
}

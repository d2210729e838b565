package conv

import "fmt"

// Forward computes the 3x3 stride-1 padding-1 convolution of a chunk of
// cnt images of pl's size with the packed filter f: for every output
// channel co and position p of the chunk,
//
//	y[co*ldy+p] (+)= sum over ci, kh, kw of w[co][ci][kh][kw] * x[ci*ldx + p + (kh-1)*W + (kw-1)]
//
// where the input is zero outside each image; the result is added to y
// when acc, else stored. x and y are channel-major chunks (see the package
// documentation).
func Forward(pl *Plan, f *Filter, y []float32, ldy int, x []float32, ldx int, cnt int, acc bool) {
	n := cnt * pl.h * pl.w
	if n == 0 || f.out == 0 {
		return
	}
	checkPlanes("y", y, ldy, f.out, n)
	if f.in == 0 {
		if !acc {
			for co := range f.out {
				clear(y[co*ldy:][:n])
			}
		}
		return
	}
	checkPlanes("x", x, ldx, f.in, n)
	mr, nv := f.t.mr, f.t.nv
	kern := forwardKernel(f.t)
	nvec := cnt * pl.vpi
	var tmp [16 * maxNV * Lanes]float32
	var tmask [maxNV * 9]uint16
	accFlag := 0
	if acc {
		accFlag = 1
	}
	for g := 0; g < nvec; g += nv {
		masks := pl.masks[(g%(pl.rep*pl.vpi))*9:]
		whole := g+nv <= nvec
		if !whole {
			// The last block: the vectors past the chunk read nothing.
			clear(tmask[:])
			copy(tmask[:], masks[:(nvec-g)*9])
			masks = tmask[:]
		}
		xp := &x[g*Lanes]
		for b := 0; b*mr < f.out; b++ {
			w := &f.data[b*mr*9*f.in]
			rows := min(mr, f.out-b*mr)
			if whole && rows == mr {
				kern(f.in, xp, ldx, w, &pl.off, &masks[0], &y[b*mr*ldy+g*Lanes], ldy, accFlag)
				continue
			}
			// An edge block: computed into tmp, then its valid part merged.
			ld := nv * Lanes
			kern(f.in, xp, ldx, w, &pl.off, &masks[0], &tmp[0], ld, 0)
			cols := min(ld, n-g*Lanes)
			for r := range rows {
				dst := y[(b*mr+r)*ldy+g*Lanes:][:cols]
				src := tmp[r*ld:][:cols]
				if acc {
					for j, v := range src {
						dst[j] += v
					}
				} else {
					copy(dst, src)
				}
			}
		}
	}
}

// checkPlanes panics unless s holds planes planes of n floats, ld apart.
func checkPlanes(name string, s []float32, ld, planes, n int) {
	if ld < n {
		panic(fmt.Sprintf("conv: ld%s=%d is less than the chunk's %d positions", name, ld, n))
	}
	if planes > 0 && len(s) < (planes-1)*ld+n {
		panic(fmt.Sprintf("conv: len(%s)=%d, want >= %d for %d planes of %d floats %d apart", name, len(s), (planes-1)*ld+n, planes, n, ld))
	}
}

package conv

import "fmt"

// PhasesLen returns the floats Phases writes for c channels of a chunk of
// cnt images of the stride-2 plan pl: per channel, four planes of the
// output map's size.
func PhasesLen(pl *Plan, c, cnt int) int { return c * 4 * cnt * pl.fwd.oh * pl.fwd.ow }

// Phases splits the c input planes of a chunk of cnt images (x, planes ldx
// apart, h x w maps) into the phase planes stride-2 kernels read: dst
// holds, per channel (4*cnt*oh*ow floats apart), the planes of even rows
// and even columns, even rows and odd columns, odd rows and even columns,
// odd rows and odd columns, each cnt images of oh x ow.
func Phases(pl *Plan, dst, x []float32, ldx, c, cnt int) {
	if pl.stride != 2 {
		panic("conv.Phases: not a stride-2 plan")
	}
	h, w, oh, ow := pl.h, pl.w, pl.fwd.oh, pl.fwd.ow
	n := cnt * oh * ow
	if len(dst) < c*4*n {
		panic(fmt.Sprintf("conv.Phases: dst holds %d floats, need %d", len(dst), c*4*n))
	}
	if c > 0 && n > 0 {
		checkPlanes("x", x, ldx, c, cnt*h*w)
	}
	for ci := range c {
		src := x[ci*ldx:]
		ph := dst[ci*4*n:]
		for img := range cnt {
			for i := range oh {
				even := src[(img*h+2*i)*w:][:w]
				odd := src[(img*h+2*i+1)*w:][:w]
				o := (img*oh + i) * ow
				splitRow(ph[o:][:ow], ph[n+o:][:ow], even)
				splitRow(ph[2*n+o:][:ow], ph[3*n+o:][:ow], odd)
			}
		}
	}
}

// MergePhases adds (or stores, when !acc) the four phase planes of c
// channels of a chunk of cnt images (src, laid out as Phases writes them)
// into the h x w planes of dst (ldd apart): the inverse of Phases.
func MergePhases(pl *Plan, dst []float32, ldd int, src []float32, c, cnt int, acc bool) {
	h, w, oh, ow := pl.h, pl.w, pl.fwd.oh, pl.fwd.ow
	n := cnt * oh * ow
	if c > 0 && n > 0 {
		checkPlanes("dst", dst, ldd, c, cnt*h*w)
	}
	for ci := range c {
		d := dst[ci*ldd:]
		ph := src[ci*4*n:]
		for img := range cnt {
			for i := range oh {
				even := d[(img*h+2*i)*w:][:w]
				odd := d[(img*h+2*i+1)*w:][:w]
				o := (img*oh + i) * ow
				mergeRow(even, ph[o:][:ow], ph[n+o:][:ow], acc)
				mergeRow(odd, ph[2*n+o:][:ow], ph[3*n+o:][:ow], acc)
			}
		}
	}
}

// splitRow writes the even elements of row to e and the odd ones to o.
func splitRow(e, o, row []float32) {
	row = row[:2*len(e)]
	o = o[:len(e)]
	for j := range e {
		e[j], o[j] = row[2*j], row[2*j+1]
	}
}

// mergeRow interleaves e and o into row (even, odd), adding when acc.
func mergeRow(row, e, o []float32, acc bool) {
	row = row[:2*len(e)]
	o = o[:len(e)]
	if acc {
		for j := range e {
			row[2*j] += e[j]
			row[2*j+1] += o[j]
		}
		return
	}
	for j := range e {
		row[2*j], row[2*j+1] = e[j], o[j]
	}
}

package conv

import "github.com/duel-ssl/duel/kernels/gemm"

// The patch matrix as a GEMM operand that is never stored (an implicit
// im2col). Where the GEMM packs its B operand into 16-wide micro-panels
// (the AVX2 tile), writing the patch matrix and then copying it into
// panels moved every element twice; patchSource writes the panels straight
// from the input. Row r = (ci*K+ki)*K+kj of the patch matrix and column
// j = image*OH*OW + output position hold the same value as im2col's, so
// the products are bit-identical.
//
// A 16-wide panel of a stride-1 convolution whose output is as wide as its
// input (a ResNet's 3x3 padding-1 layers) covers 16 consecutive output
// positions of one image when OH*OW is a multiple of 16. For kernel tap t
// its 16 values are then 16 consecutive input values, at a fixed offset
// d_t from the panel's first position in the channel's plane, with the
// lanes whose pixel falls in the padding (or wraps around a row edge)
// zeroed: a row of the panel is one 64-byte load, an AND with the tap's
// lane mask and one store (gatherRows16). The offsets and masks depend
// only on the panel's position in the image and the tap: patchTables
// holds them for every position. Other panels (other geometries, the
// first and last rows of the input, where a load would reach outside it)
// are gathered lane by lane.

// patchTap is the gather of one kernel tap for one panel position: the
// offset of lane 0's input value from the panel's first output position
// in the channel's plane (0 when every lane is in the padding, so that the
// load stays inside the input), and the lanes to keep (all ones) or zero.
// gatherRows16 reads off at byte 0 and mask at byte 8.
type patchTap struct {
	off  int
	mask [16]uint32
}

// patchPanel is the width of the panels patchTables describes.
const patchPanel = 16

// implicitPatches reports whether the GEMM of a convolution whose product
// has m rows should take its patch matrix from a patchSource: the GEMM
// packs its B operand into 16-wide panels, the gather kernel runs on this
// CPU and every panel covers 16 positions of one image of a stride-1
// convolution as wide as its input.
func (g geom) implicitPatches(m int) bool {
	nr, packs := gemm.PackedPanelWidth(m)
	return packs && nr == patchPanel && gatherFast() && g.gatherShape() && !g.bf16
}

// gatherShape reports whether g's panels are gathered whole by
// gatherRows16 (see the comment at the top of the file).
func (g geom) gatherShape() bool {
	return g.s == 1 && g.ow == g.w && g.oh == g.h && g.ohw() > 0 && g.ohw()%patchPanel == 0
}

// patchTables returns the taps of every panel position of g (gatherShape):
// entry (pos/16)*K*K + t is tap t of the panel starting at output
// position pos.
func (g geom) patchTables() []patchTap {
	kk := g.k * g.k
	tabs := make([]patchTap, g.ohw()/patchPanel*kk)
	for q := range g.ohw() / patchPanel {
		pos0 := q * patchPanel
		for ki := range g.k {
			for kj := range g.k {
				e := &tabs[q*kk+ki*g.k+kj]
				inside := false
				for t := range patchPanel {
					pos := pos0 + t
					ih, iw := pos/g.ow+ki-g.p, pos%g.ow+kj-g.p
					if ih >= 0 && ih < g.h && iw >= 0 && iw < g.w {
						e.mask[t] = ^uint32(0)
						inside = true
					}
				}
				if inside {
					e.off = (ki-g.p)*g.w + kj - g.p
				}
			}
		}
	}
	return tabs
}

// patchSource is the patch matrix of images [n0, n0+cnt) of the input x
// (layout g.xcm), (In*K*K) x (cnt*OH*OW), as a gemm.PanelSource.
type patchSource struct {
	g       geom
	x       []float32
	n0, cnt int
	tabs    []patchTap // g.patchTables(), or nil: every panel lane by lane
}

// PackPanels writes micro-panels q0 <= q < q1 of the patch matrix's
// block [p0:p0+kc, j0:j0+nc] into dst (see gemm.PanelSource).
func (s *patchSource) PackPanels(dst []float32, p0, kc, j0, nc, nr, q0, q1 int) {
	for q := q0; q < q1; q++ {
		panel := dst[q*nr*kc : (q+1)*nr*kc]
		col0, cols := j0+q*nr, min(nr, nc-q*nr)
		if nr == patchPanel && cols == nr && s.gatherPanel(panel, p0, kc, col0) {
			continue
		}
		s.packLanes(panel, p0, kc, col0, cols, nr)
	}
}

// gatherPanel writes the kc x 16 panel of rows [p0, p0+kc) and columns
// [col0, col0+16) with gatherRows16 and reports true, or reports false
// when the panel is not gathered whole (no tables, the panel spans two
// images, or a row's 16-value load would reach outside the input).
func (s *patchSource) gatherPanel(panel []float32, p0, kc, col0 int) bool {
	g := s.g
	ohw := g.ohw()
	pos0 := col0 % ohw
	if s.tabs == nil || pos0+patchPanel > ohw || pos0%patchPanel != 0 || kc == 0 {
		return false
	}
	kk := g.k * g.k
	img := s.n0 + col0/ohw
	off, cs := g.image(img)
	c0, c1 := p0/kk, (p0+kc-1)/kk
	reach := g.p*g.w + g.p // the farthest a tap's offset goes from 0
	first, last := off+c0*cs+pos0, off+c1*cs+pos0
	if first-reach < 0 || last+reach+patchPanel > len(s.x) {
		return false
	}
	gatherRows(panel, s.x, first, cs, s.tabs[pos0/patchPanel*kk:][:kk], p0%kk, kc)
	return true
}

// packLanes writes the kc x nr panel of rows [p0, p0+kc) and columns
// [col0, col0+cols) value by value, as im2col would have written them
// (any geometry); the columns past cols are zero.
func (s *patchSource) packLanes(panel []float32, p0, kc, col0, cols, nr int) {
	g := s.g
	ohw, kk := g.ohw(), g.k*g.k
	// Per lane: the input offset of its image and the input row and
	// column of its output position under tap (0, 0).
	var buf [3 * 32]int
	lanes := buf[:]
	if 3*cols > len(buf) {
		lanes = make([]int, 3*cols)
	}
	base, ih0, iw0 := lanes[:cols], lanes[cols:2*cols], lanes[2*cols:3*cols]
	for j := range cols {
		col := col0 + j
		off, _ := g.image(s.n0 + col/ohw)
		pos := col % ohw
		base[j], ih0[j], iw0[j] = off, pos/g.ow*g.s-g.p, pos%g.ow*g.s-g.p
	}
	_, cs := g.image(s.n0)
	for p := range kc {
		r := p0 + p
		ci, t := r/kk, r%kk
		ki, kj := t/g.k, t%g.k
		row := panel[p*nr : (p+1)*nr]
		clear(row[cols:])
		for j := range cols {
			ih, iw := ih0[j]+ki, iw0[j]+kj
			if ih < 0 || ih >= g.h || iw < 0 || iw >= g.w {
				row[j] = 0
				continue
			}
			row[j] = s.x[base[j]+ci*cs+ih*g.w+iw]
		}
	}
}

// gatherRows writes rows rows of a 16-wide panel into dst: row i is tap
// t = (t0+i) mod len(tabs) of the channel c = (t0+i) / len(tabs) counted
// from the one at x[start], the 16 values x[start+c*cs+tabs[t].off:]
// masked by the tap's lanes. Every load must lie inside x.
func gatherRows(dst, x []float32, start, cs int, tabs []patchTap, t0, rows int) {
	if gatherRowsAsm(dst, x, start, cs, tabs, t0, rows) {
		return
	}
	gatherRowsGo(dst, x, start, cs, tabs, t0, rows)
}

// gatherRowsGo is gatherRows in Go (the reference of gatherRows16).
func gatherRowsGo(dst, x []float32, start, cs int, tabs []patchTap, t0, rows int) {
	t, c := t0, start
	for i := range rows {
		e := &tabs[t]
		d := dst[i*patchPanel : (i+1)*patchPanel]
		src := x[c+e.off:][:patchPanel]
		for j := range d {
			d[j] = src[j]
			if e.mask[j] == 0 {
				d[j] = 0
			}
		}
		if t++; t == len(tabs) {
			t, c = 0, c+cs
		}
	}
}

package conv

import (
	"unsafe"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// The transposed patch matrix as a GEMM operand that is never stored: the
// weight gradient dW = dy * col^T takes col^T as its B operand, whose
// 16-wide micro-panels are 16 rows of col (16 (channel, tap) pairs) over
// a block of output positions, transposed. Where the GEMM packs 16-wide
// panels, patchSourceT writes them straight from the input: per 8
// positions of one image, each of the 16 rows is 8 consecutive input
// values at its channel's plane plus the tap's offset, masked by the tap's
// lanes for those positions, and the 16 x 8 block is transposed into 8
// panel rows (transposeGather16). The values are im2col's, so the products
// are bit-identical.

// patchBlock is the width, in output positions, of the blocks
// patchTablesT describes.
const patchBlock = 8

// gatherShapeT reports whether g's transposed panels are gathered by
// transposeGather16: a stride-1 convolution as wide as its input whose
// maps hold whole 8-position blocks.
func (g geom) gatherShapeT() bool {
	return g.s == 1 && g.ow == g.w && g.oh == g.h && g.ohw() > 0 && g.ohw()%patchBlock == 0
}

// implicitPatchesT reports whether the weight-gradient GEMM of g, whose
// product has m rows, should take its B operand from a patchSourceT.
func (g geom) implicitPatchesT(m int) bool {
	nr, packs := gemm.PackedPanelWidth(m)
	return packs && nr == patchPanel && gatherFast() && g.gatherShapeT() && !g.bf16
}

// patchTablesT returns the lane masks of every tap and 8-position block of
// g (gatherShapeT): entry (t*blocks + b)*8 + i is all ones when position
// b*8+i of an output map reads inside the input under tap t, else zero
// (blocks = OH*OW/8); "tap" K*K, all zeros, fills the rows of a partial
// panel.
func (g geom) patchTablesT() []uint32 {
	blocks := g.ohw() / patchBlock
	masks := make([]uint32, (g.k*g.k+1)*blocks*patchBlock)
	for ki := range g.k {
		for kj := range g.k {
			t := ki*g.k + kj
			for pos := range g.ohw() {
				ih, iw := pos/g.ow+ki-g.p, pos%g.ow+kj-g.p
				if ih >= 0 && ih < g.h && iw >= 0 && iw < g.w {
					masks[t*blocks*patchBlock+pos] = ^uint32(0)
				}
			}
		}
	}
	return masks
}

// patchSourceT is the transposed patch matrix of images [n0, n0+cnt) of
// the input x (layout g.xcm), (cnt*OH*OW) x (In*K*K), as a
// gemm.PanelSource.
type patchSourceT struct {
	g       geom
	x       []float32
	n0, cnt int
	masks   []uint32 // g.patchTablesT(), or nil: every panel value by value
}

// PackPanels writes micro-panels q0 <= q < q1 of col^T's block
// [p0:p0+kc, j0:j0+nc] (positions p, patch rows j) into dst (see
// gemm.PanelSource).
func (s *patchSourceT) PackPanels(dst []float32, p0, kc, j0, nc, nr, q0, q1 int) {
	for q := q0; q < q1; q++ {
		panel := dst[q*nr*kc : (q+1)*nr*kc]
		r0, rows := j0+q*nr, min(nr, nc-q*nr)
		if nr == patchPanel && s.gatherPanel(panel, p0, kc, r0, rows) {
			continue
		}
		s.packValues(panel, p0, kc, r0, rows, nr)
	}
}

// gatherPanel writes the kc x 16 panel of positions [p0, p0+kc) and patch
// rows [r0, r0+rows) (zero columns past rows) with transposeGather16, one
// image's run of positions at a time, and reports true; or reports false,
// having written nothing, when the panel is not gathered whole (no
// tables, positions not in whole blocks, or a load that would reach
// outside the input).
func (s *patchSourceT) gatherPanel(panel []float32, p0, kc, r0, rows int) bool {
	g := s.g
	ohw, kk := g.ohw(), g.k*g.k
	if s.masks == nil || p0%patchBlock != 0 || kc%patchBlock != 0 || kc == 0 || rows <= 0 {
		return false
	}
	reach := g.p*g.w + g.p
	c0, c1 := r0/kk, (r0+rows-1)/kk
	// The first and last loads of the whole panel.
	offA, _ := g.image(s.n0 + p0/ohw)
	offB, cs := g.image(s.n0 + (p0+kc-1)/ohw)
	if offA+c0*cs+p0%ohw-reach < 0 || offB+c1*cs+(p0+kc-1)%ohw+1+reach > len(s.x) {
		return false
	}
	blocks := ohw / patchBlock
	var src [patchPanel]*float32
	var masks [patchPanel]*uint32
	for p := p0; p < p0+kc; {
		img, pos := s.n0+p/ohw, p%ohw
		run := min(p0+kc-p, ohw-pos)
		off, _ := g.image(img)
		for i := range patchPanel {
			ci, t := (r0+i)/kk, (r0+i)%kk
			if i >= rows {
				// Past the last patch row: row 0's values under all-zero masks.
				src[i], masks[i] = src[0], &s.masks[(kk*blocks+pos/patchBlock)*patchBlock]
				continue
			}
			d := (t/g.k-g.p)*g.w + t%g.k - g.p
			src[i] = &s.x[off+ci*cs+pos+d]
			masks[i] = &s.masks[(t*blocks+pos/patchBlock)*patchBlock]
		}
		transposeGather(panel[(p-p0)*patchPanel:], &src, &masks, run)
		p += run
	}
	return true
}

// packValues writes the kc x nr panel of positions [p0, p0+kc) and patch
// rows [r0, r0+rows) value by value, as im2col's matrix transposed (any
// geometry); the columns past rows are zero.
func (s *patchSourceT) packValues(panel []float32, p0, kc, r0, rows, nr int) {
	g := s.g
	ohw, kk := g.ohw(), g.k*g.k
	_, cs := g.image(s.n0)
	for p := range kc {
		col := p0 + p
		off, _ := g.image(s.n0 + col/ohw)
		pos := col % ohw
		ih0, iw0 := pos/g.ow*g.s-g.p, pos%g.ow*g.s-g.p
		row := panel[p*nr : (p+1)*nr]
		clear(row[rows:])
		for j := range rows {
			ci, t := (r0+j)/kk, (r0+j)%kk
			ih, iw := ih0+t/g.k, iw0+t%g.k
			if ih < 0 || ih >= g.h || iw < 0 || iw >= g.w {
				row[j] = 0
				continue
			}
			row[j] = s.x[off+ci*cs+ih*g.w+iw]
		}
	}
}

// transposeGather writes n (a multiple of 8) rows of a 16-wide panel into
// dst: dst[p*16+i] is rows[i]'s p-th value ANDed with masks[i]'s p-th
// mask. Every rows[i][0:n] must lie inside its slice.
func transposeGather(dst []float32, rows *[patchPanel]*float32, masks *[patchPanel]*uint32, n int) {
	if n <= 0 {
		return
	}
	_ = dst[n*patchPanel-1]
	if transposeGatherAsm(dst, rows, masks, n) {
		return
	}
	transposeGatherGo(dst, rows, masks, n)
}

// transposeGatherGo is transposeGather in Go (the reference of
// transposeGather16).
func transposeGatherGo(dst []float32, rows *[patchPanel]*float32, masks *[patchPanel]*uint32, n int) {
	for i := range patchPanel {
		src, m := unsafe.Slice(rows[i], n), unsafe.Slice(masks[i], n)
		for p, v := range src {
			if m[p] == 0 {
				v = 0
			}
			dst[p*patchPanel+i] = v
		}
	}
}

package memory

import (
	"unsafe"

	"github.com/duel-ssl/duel/kernels/gemm"
	"github.com/duel-ssl/duel/kernels/igemm"
)

// gridSet holds grid rows (see similarity.go) as int16, in the two layouts
// the products of the fast path read: row-major (the left operand, read in
// place) and packed for kernels/igemm (the right operand). Rows can be
// replaced one at a time, so that the memory's slots are never repacked
// whole.
//
// Products are exact integer dot products: igemm's AVX-512 VNNI or AVX2
// kernel when one runs (igemm.Accelerated), else float32 SGEMM on the same integers
// (exact, see similarity.go), so the result is the same on every CPU.
type gridSet struct {
	z      int
	rows   []int16
	packed igemm.Packed
}

// reset sizes g for n rows of z values, all zero.
func (g *gridSet) reset(n, z int) {
	g.z = z
	g.rows = grow(g.rows, n*z)
	clear(g.rows)
	g.packed.Reset(n, z)
}

// n returns the number of rows.
func (g *gridSet) n() int { return g.packed.Rows() }

// row returns row i.
func (g *gridSet) row(i int) []int16 { return g.rows[i*g.z : (i+1)*g.z] }

// setUnit stores the grid version of the unit row src as row i: each
// component x becomes floor(2048*x + 1/2), as toGrid does.
func (g *gridSet) setUnit(i int, src []float32) {
	dst := g.row(i)
	gridRow(dst, src)
	g.packed.SetRow(i, dst)
}

// fromUnit sizes g for the n unit rows of z values in src and stores
// their grid versions, on all cores for large sets (see parallelValues).
func (g *gridSet) fromUnit(src []float32, n, z int) {
	g.reset(n, z)
	parallelValues(n, z, func(i0, i1 int) { // rows and packed pairs are disjoint
		for i := i0; i < i1; i++ {
			gridRow(g.row(i), src[i*z:(i+1)*z])
		}
		g.packRows(i0, i1)
	})
}

// packRows stores rows i0..i1-1 of g.rows into g.packed, as SetRow does
// row by row: with an even z, the rows of each panel are moved as int32
// pairs by a transposition (transposeBandCached: sixteen rows' pairs at a
// time into whole runs, kept in the cache for the product that reads
// them), where SetRow, slower, writes one pair of each row 2*NR values
// apart.
func (g *gridSet) packRows(i0, i1 int) {
	z := g.z
	if z%2 == 1 || z == 0 {
		for i := i0; i < i1; i++ {
			g.packed.SetRow(i, g.row(i))
		}
		return
	}
	kp := z / 2
	for i := i0; i < i1; {
		P := i / igemm.NR
		end := min(i1, (P+1)*igemm.NR)
		panel := g.packed.Panel(P)
		colT := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(panel))), len(panel)/2)
		rows := g.rows[P*igemm.NR*z : end*z]
		dots := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(rows))), len(rows)/2)
		transposeBandCached(colT, dots, kp, igemm.NR, kp, i-P*igemm.NR, end-P*igemm.NR)
		i = end
	}
}

// setRow stores the grid row src as row i.
func (g *gridSet) setRow(i int, src []int16) {
	copy(g.row(i), src)
	g.packed.SetRow(i, src)
}

// dots computes c[r*ldc+j] = a_r . g_j for the m grid rows a (z values
// each, contiguous) and every row j of g.
func (g *gridSet) dots(c []int32, ldc int, a []int16, m int) {
	n, z := g.n(), g.z
	if m == 0 || n == 0 {
		return
	}
	if igemm.Accelerated() {
		igemm.Mul(c, ldc, a, z, m, &g.packed)
		return
	}
	af, bf := toFloat(a[:m*z]), toFloat(g.rows[:n*z])
	cf := make([]float32, m*n)
	gemm.Sgemm(false, true, m, n, z, 1, af, z, bf, z, 0, cf, n)
	for r := 0; r < m; r++ {
		for j, v := range cf[r*n : (r+1)*n] {
			c[r*ldc+j] = int32(v)
		}
	}
}

// toFloat returns the int16 values v as float32.
func toFloat(v []int16) []float32 {
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

// dotsConcat computes, for the m grid rows a, the dots with the rows of
// every gs in turn: c[r*ldc+j] for j over the rows of gs[0], then gs[1]...
// With igemm's kernel, one product shares out all their panels among its
// threads.
func dotsConcat(c []int32, ldc int, a []int16, m int, gs ...*gridSet) {
	if igemm.Accelerated() && m > 0 {
		bs := make([]*igemm.Packed, len(gs))
		for i, g := range gs {
			bs[i] = &g.packed
		}
		igemm.MulConcat(c, ldc, a, gs[0].z, m, bs...)
		return
	}
	off := 0
	for _, g := range gs {
		g.dots(c[off:], ldc, a, m)
		off += g.n()
	}
}

package gemm

import (
	"fmt"
	"math"

	"github.com/duel-ssl/duel/internal/par"
)

// The bfloat16 products on AMX tiles (Intel Sapphire Rapids and later,
// DUEL_ISA=amx): TDPBF16PS multiplies a 16 x 32 tile of bfloat16 (16 rows
// of A, 16 pairs of k each) by a 16 x 16 tile of pairs (16 pair rows of B,
// 16 columns) into a 16 x 16 tile of float32 sums. The operands are the
// words SgemmPairedBF16 takes: op(A2) m x k2 and op(B2) k2 x n, each word
// the bfloat16 pair of two consecutive k, which is exactly the tiles'
// layout when A2 is not transposed (a row's pairs contiguous) and B2 is
// not (a pair row's columns contiguous). So a tile kernel call reads them
// in place, row strides as they are, and only the edges (and transposed
// operands) are copied into zero-padded panels.

const (
	amxTile  = 16           // rows of a tile; pairs (A) or columns (B, C) of a tile row: 64 bytes
	amxBlock = 2 * amxTile  // rows and columns of the block of C one tile kernel call computes
	amxKC    = 32 * amxTile // pairs of k a block of the product takes (C loaded and stored once a block)
)

// tileKernel computes one amxBlock x amxBlock block of C (rows ldc floats
// apart): C = A*B, or C += A*B when load is not 0, where A is amxBlock rows
// of steps*amxTile words lda apart and B is steps*amxTile rows of amxBlock
// words ldb apart, every word a bfloat16 pair; cfg is amxConfig's tile
// configuration. tileAMX runs the assembly, tileBF16Go is its model.
type tileKernel func(cfg *[64]byte, steps int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, load int)

// checkTileArgs panics unless the slices hold what a tile kernel call
// reads and writes (the assembly's bounds check).
func checkTileArgs(steps int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	kw := steps * amxTile
	if steps < 0 || lda < kw || ldb < amxBlock || ldc < amxBlock || len(c) < (amxBlock-1)*ldc+amxBlock ||
		(kw > 0 && (len(a) < (amxBlock-1)*lda+kw || len(b) < (kw-1)*ldb+amxBlock)) {
		panic(fmt.Sprintf("gemm: tile kernel arguments out of range: steps %d, lda %d, ldb %d, ldc %d, len(a) %d, len(b) %d, len(c) %d",
			steps, lda, ldb, ldc, len(a), len(b), len(c)))
	}
}

// amxConfig returns the 64-byte tile configuration of the tile kernels
// (LDTILECFG's memory operand): palette 1, tiles 0-7 of 16 rows of 64
// bytes (C's four, A's two, B's two), the others unused.
func amxConfig() *[64]byte {
	var cfg [64]byte
	cfg[0] = 1 // palette
	for t := range 8 {
		cfg[16+2*t] = 4 * amxTile // colsb, little-endian uint16
		cfg[48+t] = amxTile       // rows
	}
	return &cfg
}

// tileBF16Go is the tile kernel in Go: TDPBF16PS as the Intel SDM
// (vol. 2, "TDPBF16PS") writes it, for each element of a C tile and each
// pair of k in order, the even products added, then the odd, each
// addition rounded to float32 (through float64: the last bit may rarely
// differ from the hardware's single rounding), denormal operands read as
// zero and denormal sums flushed to zero. It checks that cfg is
// amxConfig's, as the hardware would fault on another.
func tileBF16Go(cfg *[64]byte, steps int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, load int) {
	if *cfg != *amxConfig() {
		panic("gemm: tile kernel called with a tile configuration other than amxConfig's")
	}
	checkTileArgs(steps, a, lda, b, ldb, c, ldc)
	kw := steps * amxTile
	for i := range amxBlock {
		for j := range amxBlock {
			var sum float32
			if load != 0 {
				sum = c[i*ldc+j]
			}
			for q := range kw {
				wa := math.Float32bits(a[i*lda+q])
				wb := math.Float32bits(b[q*ldb+j])
				sum = dpAdd(sum, wa<<16, wb<<16)
				sum = dpAdd(sum, wa&^0xffff, wb&^0xffff)
			}
			c[i*ldc+j] = sum
		}
	}
}

// dpAdd returns sum + x*y for the float32 bit patterns x and y (bfloat16
// values, so the product is exact), rounded to float32, with TDPBF16PS's
// denormal rules: denormal operands are zero, a denormal result is zero
// of its sign.
func dpAdd(sum float32, x, y uint32) float32 {
	r := float32(math.FMA(dazValue(x), dazValue(y), dazValue(math.Float32bits(sum))))
	if u := math.Float32bits(r); u&0x7f800000 == 0 {
		r = math.Float32frombits(u & 0x80000000)
	}
	return r
}

// dazValue returns the float32 bit pattern u as a float64, a denormal as
// zero of its sign.
func dazValue(u uint32) float64 {
	if u&0x7f800000 == 0 {
		u &= 0x80000000
	}
	return float64(math.Float32frombits(u))
}

// amxProduct computes the paired product p (k counted in pairs, alpha 1:
// C = op(A2)*op(B2) + beta*C) with the tile kernel tk on at most threads
// goroutines. Each block of C is computed by one goroutine in one order,
// so the result does not depend on threads.
func amxProduct(tk tileKernel, p problem, threads int) {
	cfg := amxConfig()
	load := 1
	switch p.beta {
	case 0:
		load = 0
	case 1:
	default:
		par.For(p.m, rowWorkers(p.m*p.n, threads), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				row := p.c[i*p.ldc : i*p.ldc+p.n]
				for j := range row {
					row[j] *= p.beta
				}
			}
		})
	}
	mb, nb := (p.m+amxBlock-1)/amxBlock, (p.n+amxBlock-1)/amxBlock
	for s0 := 0; s0 < p.k; s0 += amxKC {
		kc := min(amxKC, p.k-s0)
		par.For(mb*nb, threads, func(lo, hi int) {
			w := newAMXWork(tk, cfg, p, s0, kc)
			defer w.free()
			for t := lo; t < hi; t++ {
				w.block(t%mb*amxBlock, t/mb*amxBlock, load)
			}
		})
		load = 1
	}
}

// amxWork is one goroutine's state in one block of k of amxProduct: the
// problem, the block's k range, and the panels it copies edges into.
type amxWork struct {
	tk     tileKernel
	cfg    *[64]byte
	p      problem
	s0, kc int
	full   int // whole 16-pair steps of the block; kc - full*amxTile pairs remain
	a, b   *[]float32
	c      [amxBlock * amxBlock]float32
	ta, tb [amxBlock * amxTile]float32 // the remaining pairs' panels
}

// newAMXWork returns the work of the k block [s0, s0+kc) of p.
func newAMXWork(tk tileKernel, cfg *[64]byte, p problem, s0, kc int) *amxWork {
	w := &amxWork{tk: tk, cfg: cfg, p: p, s0: s0, kc: kc, full: kc / amxTile}
	w.a = getWords(amxBlock * max(w.full*amxTile, 1))
	w.b = getWords(amxBlock * max(w.full*amxTile, 1))
	return w
}

// free returns the panels to their pools.
func (w *amxWork) free() {
	putWords(w.a)
	putWords(w.b)
}

// block computes the block of C whose top left element is (i0, j0) over
// the work's k block, adding to C when load is 1.
func (w *amxWork) block(i0, j0, load int) {
	p := w.p
	rows, cols := min(amxBlock, p.m-i0), min(amxBlock, p.n-j0)
	c, ldc := p.c[i0*p.ldc+j0:], p.ldc
	inPlace := rows == amxBlock && cols == amxBlock
	if !inPlace {
		c, ldc = w.c[:], amxBlock
		if load != 0 {
			for i := range rows {
				copy(w.c[i*amxBlock:i*amxBlock+cols], p.c[(i0+i)*p.ldc+j0:])
			}
		}
	}
	if w.full > 0 {
		kw := w.full * amxTile
		a, lda := w.panelA(i0, rows, w.s0, kw, *w.a)
		b, ldb := w.panelB(j0, cols, w.s0, kw, *w.b)
		w.tk(w.cfg, w.full, a, lda, b, ldb, c, ldc, load)
		load = 1
	}
	if rest := w.kc - w.full*amxTile; rest > 0 {
		s := w.s0 + w.full*amxTile
		a, lda := w.packA(w.ta[:], amxTile, i0, rows, s, rest)
		b, ldb := w.packB(w.tb[:], amxBlock, j0, cols, s, rest)
		w.tk(w.cfg, 1, a, lda, b, ldb, c, ldc, load)
	}
	if !inPlace {
		for i := range rows {
			copy(p.c[(i0+i)*p.ldc+j0:(i0+i)*p.ldc+j0+cols], w.c[i*amxBlock:])
		}
	}
}

// panelA returns the amxBlock rows of op(A2) from i0 (rows of them real)
// over the pairs [s, s+kw) as a tile kernel reads them, with their row
// stride: A2 itself when it is not transposed and holds all the rows,
// else a copy in buf, zero past the real rows.
func (w *amxWork) panelA(i0, rows, s, kw int, buf []float32) ([]float32, int) {
	p := w.p
	if !p.transA && rows == amxBlock {
		return p.a[i0*p.lda+s:], p.lda
	}
	return w.packA(buf, kw, i0, rows, s, kw)
}

// packA copies the rows [i0, i0+rows) of op(A2) over the pairs [s,
// s+kw) into buf as amxBlock rows of width words (zero past rows and kw)
// and returns buf and width.
func (w *amxWork) packA(buf []float32, width, i0, rows, s, kw int) ([]float32, int) {
	p := w.p
	buf = buf[:amxBlock*width]
	clear(buf)
	for i := range rows {
		dst := buf[i*width : i*width+kw]
		if !p.transA {
			copy(dst, p.a[(i0+i)*p.lda+s:])
			continue
		}
		for q := range dst {
			dst[q] = p.a[(s+q)*p.lda+i0+i]
		}
	}
	return buf, width
}

// panelB is panelA for op(B2): its pair rows [s, s+kw) over the columns
// from j0 (cols of them real), B2 itself when not transposed and wide
// enough.
func (w *amxWork) panelB(j0, cols, s, kw int, buf []float32) ([]float32, int) {
	p := w.p
	if !p.transB && cols == amxBlock {
		return p.b[s*p.ldb+j0:], p.ldb
	}
	return w.packB(buf, amxBlock, j0, cols, s, kw)
}

// packB copies the pair rows [s, s+kw) of op(B2) over the columns [j0,
// j0+cols) into buf as rows of amxBlock words, zero past cols and padded
// with zero rows to a whole number of steps, and returns buf and the row
// stride amxBlock.
func (w *amxWork) packB(buf []float32, ld, j0, cols, s, kw int) ([]float32, int) {
	p := w.p
	steps := (kw + amxTile - 1) / amxTile
	buf = buf[:steps*amxTile*ld]
	clear(buf)
	for q := range kw {
		dst := buf[q*ld : q*ld+cols]
		if !p.transB {
			copy(dst, p.b[(s+q)*p.ldb+j0:])
			continue
		}
		for j := range dst {
			dst[j] = p.b[(j0+j)*p.ldb+s+q]
		}
	}
	return buf, ld
}

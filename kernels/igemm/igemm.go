package igemm

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/duel-ssl/duel/internal/par"
)

// NR is the number of rows of B in one packed panel (the columns of a tile
// of C); MR is the number of rows of A in a tile.
const (
	NR = 48
	MR = 8
)

// parallelMACs is the smallest product split over several goroutines.
const parallelMACs = 1 << 21

// Packed holds the rows of B (n rows of k int16) in panels of NR rows: in
// panel P, the pair (b[j][2p], b[j][2p+1]) of row j = NR*P + l is at
// data[(P*kp + p)*2*NR + 2*l], kp = ceil(k/2) pairs per row. Missing rows
// of the last panel and the odd k-th element are zero.
type Packed struct {
	n, k, kp int
	data     []int16
}

// Reset sizes p for n rows of k int16 values, all zero, reusing its storage.
func (p *Packed) Reset(n, k int) {
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("igemm: negative size %d x %d", n, k))
	}
	p.n, p.k, p.kp = n, k, (k+1)/2
	size := panels(n) * p.kp * 2 * NR
	if cap(p.data) >= size {
		p.data = p.data[:size]
		clear(p.data)
	} else {
		p.data = make([]int16, size)
	}
}

// Rows returns n, the number of rows of B.
func (p *Packed) Rows() int { return p.n }

// SetRow stores row j of B (k values).
func (p *Packed) SetRow(j int, row []int16) {
	if j < 0 || j >= p.n || len(row) != p.k {
		panic(fmt.Sprintf("igemm: SetRow(%d, %d values) on %d x %d", j, len(row), p.n, p.k))
	}
	if p.k == 0 {
		return
	}
	base := (j/NR)*p.kp*2*NR + 2*(j%NR)
	d := p.data[base:]
	for q := 0; q+1 < len(row); q += 2 {
		o := q * NR // (q/2) * 2*NR
		d[o], d[o+1] = row[q], row[q+1]
	}
	if p.k%2 == 1 {
		d[(p.k-1)*NR] = row[p.k-1]
	}
}

// Pack stores the n rows of b (row j at b[j*ldb:j*ldb+k]) into p.
func (p *Packed) Pack(b []int16, ldb, n, k int) {
	p.Reset(n, k)
	for j := 0; j < n; j++ {
		p.SetRow(j, b[j*ldb:j*ldb+k])
	}
}

// Panel returns the storage of panel P (see Packed: the pair p of its row
// l, row NR*P+l of B, at [p*2*NR+2*l]), for callers that store many rows at
// once in their own way: SetRow writes one pair of each row 2*NR values
// apart, a transposition of 16 rows' pairs writes whole runs.
func (p *Packed) Panel(P int) []int16 {
	if P < 0 || P >= panels(p.n) {
		panic(fmt.Sprintf("igemm: Panel(%d) of %d panels", P, panels(p.n)))
	}
	size := p.kp * 2 * NR
	return p.data[P*size : (P+1)*size]
}

// Panels returns the number of panels of NR rows that hold the rows of B.
func (p *Packed) Panels() int { return panels(p.n) }

// panels returns the number of panels of NR rows holding n rows.
func panels(n int) int { return (n + NR - 1) / NR }

// Mul computes c[i*ldc+j] = sum over q < k of a[i*lda+q]*b[j][q], for
// i < m and j < b.Rows(), where b holds rows of k values. It overwrites
// those elements of c only.
func Mul(c []int32, ldc int, a []int16, lda, m int, b *Packed) {
	mul(c, ldc, a, lda, m, []*Packed{b}, active)
}

// MulConcat is Mul with B the rows of bs one after the other (all with
// the same row length): the columns of bs[0] come first in C, then those of
// bs[1], and so on. The panels of all of them are shared out among the
// threads of one call.
func MulConcat(c []int32, ldc int, a []int16, lda, m int, bs ...*Packed) {
	mul(c, ldc, a, lda, m, bs, active)
}

// MulConcatSerial is MulConcat on the calling goroutine only, for callers
// that share the rows of A out among their own threads.
func MulConcatSerial(c []int32, ldc int, a []int16, lda, m int, bs ...*Packed) {
	mulThreads(c, ldc, a, lda, m, bs, active, 1)
}

// MulPanels is Mul restricted to the rows of B in panels p0..p1-1 (rows
// NR*p0 up to min(NR*p1, b.Rows())-1), on the calling goroutine: it
// computes c[i*ldc+j] for i < m and those j only, c being column 0 of the
// product as in Mul. Callers that share a product out among their own
// threads use it to do something with each panel's columns while they are
// in cache.
func MulPanels(c []int32, ldc int, a []int16, lda, m int, b *Packed, p0, p1 int) {
	mulPanelsChecked(c, ldc, a, lda, m, b, p0, p1, active)
}

// mulPanelsChecked is MulPanels with the kernel kn (the tests run every
// available one).
func mulPanelsChecked(c []int32, ldc int, a []int16, lda, m int, b *Packed, p0, p1 int, kn kernel) {
	if p0 < 0 || p0 > p1 || p1 > panels(b.n) {
		panic(fmt.Sprintf("igemm: MulPanels(%d, %d) of %d panels", p0, p1, panels(b.n)))
	}
	if m == 0 || p0 == p1 {
		return
	}
	j1 := min(NR*p1, b.n)
	if lda < b.k || ldc < j1 || len(a) < (m-1)*lda+b.k || len(c) < (m-1)*ldc+j1 {
		panic(fmt.Sprintf("igemm: MulPanels %d x %d x %d with lda %d (len %d), ldc %d (len %d)", m, j1, b.k, lda, len(a), ldc, len(c)))
	}
	mulPanels(c, ldc, a, lda, m, b, p0, p1, kn)
}

// mul is MulConcat with the kernel kn (the tests run every available one).
func mul(c []int32, ldc int, a []int16, lda, m int, bs []*Packed, kn kernel) {
	mulThreads(c, ldc, a, lda, m, bs, kn, runtime.GOMAXPROCS(0))
}

// mulThreads is mul on up to maxThreads goroutines.
func mulThreads(c []int32, ldc int, a []int16, lda, m int, bs []*Packed, kn kernel, maxThreads int) {
	type panel struct {
		b    *Packed
		p    int // panel of b
		col0 int // its first column in C, less p*NR
	}
	var work []panel
	n, k := 0, -1
	for _, b := range bs {
		if k >= 0 && b.k != k {
			panic(fmt.Sprintf("igemm: MulConcat of rows of %d and %d values", k, b.k))
		}
		k = b.k
		for p := 0; p < panels(b.n); p++ {
			work = append(work, panel{b, p, n})
		}
		n += b.n
	}
	if m == 0 || n == 0 {
		return
	}
	if lda < k || ldc < n || len(a) < (m-1)*lda+k || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("igemm: Mul %d x %d x %d with lda %d (len %d), ldc %d (len %d)", m, n, k, lda, len(a), ldc, len(c)))
	}
	do := func(w panel) {
		mulPanels(c[w.col0:], ldc, a, lda, m, w.b, w.p, w.p+1, kn)
	}
	threads := 1
	if int64(m)*int64(n)*int64(k) >= parallelMACs {
		threads = min(maxThreads, len(work))
	}
	if threads <= 1 {
		for _, w := range work {
			do(w)
		}
		return
	}
	// Threads claim panels one at a time, so that a thread slowed down by
	// another process does not hold the others back.
	var next atomic.Int64
	claim := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(work) {
				return
			}
			do(work[i])
		}
	}
	par.Run(threads, func(int) { claim() })
}

// mulPanels computes the columns of C of panels p0..p1-1 of b with the
// kernel kn (whole MR-row tiles; the rows left over, and all rows with the
// generic kernel, one at a time in Go).
func mulPanels(c []int32, ldc int, a []int16, lda, m int, b *Packed, p0, p1 int, kn kernel) {
	n, k, kp := b.n, b.k, b.kp
	for P := p0; P < p1; P++ {
		pb := b.data[P*kp*2*NR : (P+1)*kp*2*NR]
		j0 := P * NR
		cols := min(NR, n-j0)
		i := 0
		if kn != kernGeneric {
			for ; i+MR <= m; i += MR {
				if cols == NR && k%2 == 0 {
					dots(kn, k/2, a[i*lda:], lda, pb, c[i*ldc+j0:], ldc)
					continue
				}
				edgeTile(c[i*ldc+j0:], ldc, a[i*lda:], lda, pb, k, cols, kn)
			}
		}
		for ; i < m; i++ {
			dotsRow(c[i*ldc+j0:i*ldc+j0+cols], a[i*lda:i*lda+k], pb, kp)
		}
	}
}

// edgeTile computes an MR x cols tile of C with the kernel kn through a
// tile of its own, for a panel of fewer than NR rows or an odd k (the
// last, unpaired element added in Go). Its own function, so that callers
// of whole tiles do not clear the tile at every call.
func edgeTile(c []int32, ldc int, a []int16, lda int, pb []int16, k, cols int, kn kernel) {
	var tile [MR * NR]int32
	dots(kn, k/2, a, lda, pb, tile[:], NR)
	if k%2 == 1 {
		last := pb[(k-1)*NR:] // the pairs of element k-1 (see Packed)
		for r := 0; r < MR; r++ {
			x := int32(a[r*lda+k-1])
			for l := 0; l < cols; l++ {
				tile[r*NR+l] += x * int32(last[2*l])
			}
		}
	}
	for r := 0; r < MR; r++ {
		copy(c[r*ldc:r*ldc+cols], tile[r*NR:r*NR+cols])
	}
}

// dotsRow computes the dots of one row a (k values) with the rows of the
// packed panel pb (kp pairs): the pure-Go kernel.
func dotsRow(c []int32, a []int16, pb []int16, kp int) {
	var acc [NR]int32
	for p := 0; p < kp; p++ {
		x0 := int32(a[2*p])
		var x1 int32
		if 2*p+1 < len(a) {
			x1 = int32(a[2*p+1])
		}
		s := pb[p*2*NR : (p+1)*2*NR]
		for l := range acc {
			acc[l] += x0*int32(s[2*l]) + x1*int32(s[2*l+1])
		}
	}
	copy(c, acc[:])
}

package memory

// transposeBand writes colT[c*b+bp] = dots[bp*w+c] for every column c < k
// and batch row bp in [bp0, bp1). Requires 0 <= bp0 <= bp1 <= b, k <= w,
// len(dots) >= (bp1-1)*w + k and len(colT) >= (k-1)*b + bp1 (when k > 0
// and bp1 > bp0).
//
// Where an assembly kernel runs (transposeKernel: AVX-512, or AVX2), it
// moves every full tile of 16 rows by 16 columns; the columns past the
// last multiple of 16 and the rows past the last full group of 16 go
// through transposeBandGo.
func transposeBand(colT, dots []int32, k, b, w, bp0, bp1 int) {
	transposeBandWith(transposeKernel, colT, dots, k, b, w, bp0, bp1)
}

// transposeBandCached is transposeBand with regular stores (the cached
// kernel, transposeCachedKernel), for data read soon after, where
// transposeBand may store whole lines non-temporally (see streams).
func transposeBandCached(colT, dots []int32, k, b, w, bp0, bp1 int) {
	transposeBandWith(transposeCachedKernel, colT, dots, k, b, w, bp0, bp1)
}

// transposeFunc is an assembly transposition: it moves n columns (n a
// multiple of 16) of 16 rows, row r at dots[r*w:], into n runs of 16
// values, run c at colT[c*b:].
type transposeFunc func(colT, dots []int32, n, b, w int)

// transposeBandWith is transposeBand with kern on the full 16x16 tiles
// (transposeBandGo on everything when kern is nil).
func transposeBandWith(kern transposeFunc, colT, dots []int32, k, b, w, bp0, bp1 int) {
	if bp0 < 0 || bp0 > bp1 || bp1 > b || k < 0 || k > w ||
		k > 0 && bp1 > bp0 && len(dots) < (bp1-1)*w+k || k > 0 && bp1 > bp0 && len(colT) < (k-1)*b+bp1 {
		panic("memory: transposeBand: bad arguments")
	}
	if kern == nil || k < 16 || bp1-bp0 < 16 {
		transposeBandGo(colT, dots, k, b, w, bp0, bp1)
		return
	}
	k16 := k &^ 15
	bp := bp0
	for ; bp+16 <= bp1; bp += 16 {
		kern(colT[bp:], dots[bp*w:], k16, b, w)
	}
	if k16 < k {
		transposeBandGo(colT[k16*b:], dots[k16:], k-k16, b, w, bp0, bp)
	}
	transposeBandGo(colT, dots, k, b, w, bp, bp1)
}

// transposeBandGo is transposeBand in plain Go: the reference, and the
// fallback for the edges the AVX-512 kernel leaves.
func transposeBandGo(colT, dots []int32, k, b, w, bp0, bp1 int) {
	for bp := bp0; bp < bp1; bp++ {
		for c, v := range dots[bp*w : bp*w+k] {
			colT[c*b+bp] = v
		}
	}
}

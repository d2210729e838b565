package memory

// blendRow writes, for every c < len(dst):
//
//	dst[c] = src[base+int(idx[c])]   if tick[c] > after
//	dst[c] = row[c]                  otherwise
//
// row, idx and tick have at least len(dst) elements; for every c with
// tick[c] > after, base+idx[c] is a valid index of src (idx values are
// >= 0). dst may be the same slice as row (in place).
//
// The assembly kernels (see blendKernel: AVX-512, sixteen lanes at a time
// with a masked VPGATHERDD, or AVX2, eight lanes with a vector-masked one)
// do not check the indices; entries with tick[c] <= after are never read
// from src, so their idx may be anything.
func blendRow(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	blendRowWith(blendKernel, dst, row, src, base, idx, tick, after)
}

// blendFunc is an assembly blend: blendRowGo on slices of equal length, a
// multiple of 16, without checking the indices.
type blendFunc func(dst, row, src []int32, base int, idx, tick []int32, after int32)

// blendRowWith is blendRow with kern on the first multiple of 16 entries
// and the Go loop on the rest (on all of them when kern is nil).
func blendRowWith(kern blendFunc, dst, row, src []int32, base int, idx, tick []int32, after int32) {
	n := len(dst)
	row, idx, tick = row[:n], idx[:n], tick[:n]
	m := 0
	if kern != nil {
		m = n &^ 15
		if m > 0 {
			kern(dst[:m], row[:m], src, base, idx[:m], tick[:m], after)
		}
	}
	blendRowGo(dst[m:], row[m:], src, base, idx[m:], tick[m:], after)
}

// blendRowGo is blendRow's loop in Go (the reference, the fallback and the
// tail of the assembly kernels).
func blendRowGo(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	row, idx, tick = row[:len(dst)], idx[:len(dst)], tick[:len(dst)]
	for c := range dst {
		if tick[c] > after {
			dst[c] = src[base+int(idx[c])]
		} else {
			dst[c] = row[c]
		}
	}
}

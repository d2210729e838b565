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
// The AVX-512 kernel (sixteen lanes at a time, a masked VPGATHERDD) does
// not check the indices; entries with tick[c] <= after are never read
// from src, so their idx may be anything.
func blendRow(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	n := len(dst)
	row, idx, tick = row[:n], idx[:n], tick[:n]
	m := 0
	if blendAsmOK {
		m = n &^ 15
		if m > 0 {
			blendAsm(dst[:m], row[:m], src, base, idx[:m], tick[:m], after)
		}
	}
	blendRowGo(dst[m:], row[m:], src, base, idx[m:], tick[m:], after)
}

// blendRowGo is blendRow's loop in Go (the reference, the fallback and the
// tail of the AVX-512 kernel).
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

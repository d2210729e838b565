package memory

// TEMPORARY Go version until the helper's kernel lands.

func blendRow(dst, row, src []int32, base int, idx, tick []int32, after int32) {
	for c := range dst {
		if tick[c] > after {
			dst[c] = src[base+int(idx[c])]
		} else {
			dst[c] = row[c]
		}
	}
}

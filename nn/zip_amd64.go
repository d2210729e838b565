//go:build amd64 && !noasm

package nn

// The assembly loops (zip_amd64.s) are equivalent to zipGo, zipAddGo and
// unzipGo; they run when useAVX2 (vec_amd64.go).

//go:noescape
func zipAVX2(row, e, o []float32)

//go:noescape
func zipAddAVX2(row, e, o []float32)

//go:noescape
func unzipAVX2(even, odd, line []float32)

// zip is zipGo, with AVX2 when available.
func zip(row, e, o []float32) {
	if useAVX2 {
		n := len(e)
		zipAVX2(row[:2*n], e, o[:n])
		return
	}
	zipGo(row, e, o)
}

// zipAdd is zipAddGo, with AVX2 when available.
func zipAdd(row, e, o []float32) {
	if useAVX2 {
		n := len(e)
		zipAddAVX2(row[:2*n], e, o[:n])
		return
	}
	zipAddGo(row, e, o)
}

// splitEvenOdd sets even[j] = line[2j] and odd[j] = line[2j+1] (unzipGo),
// with AVX2 when available.
func splitEvenOdd(even, odd, line []float32) {
	if useAVX2 {
		n := len(even)
		unzipAVX2(even, odd[:n], line[:2*n])
		return
	}
	unzipGo(even, odd, line)
}

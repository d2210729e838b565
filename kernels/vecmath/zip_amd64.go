//go:build amd64 && !noasm

package vecmath

// The assembly loops (zip_amd64.s) are equivalent to zipGo, zipAddGo and
// unzipGo; they run when useAVX2.

//go:noescape
func zipAVX2(row, e, o []float32)

//go:noescape
func zipAddAVX2(row, e, o []float32)

//go:noescape
func unzipAVX2(even, odd, line []float32)

// Zip sets row[2i] = e[i] and row[2i+1] = o[i] for i < len(e).
func Zip(row, e, o []float32) {
	if useAVX2 {
		n := len(e)
		zipAVX2(row[:2*n], e, o[:n])
		return
	}
	zipGo(row, e, o)
}

// ZipAdd adds e[i] to row[2i] and o[i] to row[2i+1] for i < len(e).
func ZipAdd(row, e, o []float32) {
	if useAVX2 {
		n := len(e)
		zipAddAVX2(row[:2*n], e, o[:n])
		return
	}
	zipAddGo(row, e, o)
}

// Unzip sets even[j] = line[2j] and odd[j] = line[2j+1] for
// j < len(even).
func Unzip(even, odd, line []float32) {
	if useAVX2 {
		n := len(even)
		unzipAVX2(even, odd[:n], line[:2*n])
		return
	}
	unzipGo(even, odd, line)
}

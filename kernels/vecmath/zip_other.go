//go:build !amd64 || noasm

package vecmath

// Zip sets row[2i] = e[i] and row[2i+1] = o[i] for i < len(e).
func Zip(row, e, o []float32) { zipGo(row, e, o) }

// ZipAdd adds e[i] to row[2i] and o[i] to row[2i+1] for i < len(e).
func ZipAdd(row, e, o []float32) { zipAddGo(row, e, o) }

// Unzip sets even[j] = line[2j] and odd[j] = line[2j+1] for
// j < len(even).
func Unzip(even, odd, line []float32) { unzipGo(even, odd, line) }

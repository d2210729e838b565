//go:build !amd64 || noasm

package nn

// zip is zipGo.
func zip(row, e, o []float32) { zipGo(row, e, o) }

// zipAdd is zipAddGo.
func zipAdd(row, e, o []float32) { zipAddGo(row, e, o) }

// splitEvenOdd sets even[j] = line[2j] and odd[j] = line[2j+1] (unzipGo).
func splitEvenOdd(even, odd, line []float32) { unzipGo(even, odd, line) }

package vecmath

// zipGo sets row[2i] = e[i] and row[2i+1] = o[i] for i < len(e).
func zipGo(row, e, o []float32) {
	n := len(e)
	row, o = row[:2*n], o[:n]
	for i := range e {
		q := row[2*i : 2*i+2 : 2*i+2]
		q[0] = e[i]
		q[1] = o[i]
	}
}

// zipAddGo adds e[i] to row[2i] and o[i] to row[2i+1] for i < len(e).
func zipAddGo(row, e, o []float32) {
	n := len(e)
	row, o = row[:2*n], o[:n]
	for i := range e {
		q := row[2*i : 2*i+2 : 2*i+2]
		q[0] += e[i]
		q[1] += o[i]
	}
}

// unzipGo sets even[j] = line[2j] and odd[j] = line[2j+1].
func unzipGo(even, odd, line []float32) {
	line = line[:2*len(even)]
	odd = odd[:len(even)]
	for j := range even {
		even[j], odd[j] = line[2*j], line[2*j+1]
	}
}

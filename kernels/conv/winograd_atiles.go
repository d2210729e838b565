package conv

// aTilesMap writes A dY A^T of all th x tw tiles of one even-sized
// output-gradient map src (rows of width ow = 2*tw) to ms[xi][ty*tw+i]: the
// arithmetic of aTiles (bit-identical) over a whole map, with the sixteen
// destination rows set up once and no bounds checks in the loop.
func aTilesMap(ms *[16][]float32, src []float32, th, tw int) {
	n := th * tw
	ow := 2 * tw
	src = src[:2*th*ow]
	d0, d1, d2, d3 := ms[0][:n], ms[1][:n], ms[2][:n], ms[3][:n]
	d4, d5, d6, d7 := ms[4][:n], ms[5][:n], ms[6][:n], ms[7][:n]
	d8, d9, d10, d11 := ms[8][:n], ms[9][:n], ms[10][:n], ms[11][:n]
	d12, d13, d14, d15 := ms[12][:n], ms[13][:n], ms[14][:n], ms[15][:n]
	for ty := range th {
		y0 := src[2*ty*ow : (2*ty+1)*ow]
		y1 := src[(2*ty+1)*ow : (2*ty+2)*ow]
		k := ty * tw
		for i := range tw {
			a0, a1 := y0[2*i], y0[2*i+1]
			b0, b1 := y1[2*i], y1[2*i+1]
			p0, p1, p2, p3 := a0, a0+a1, a0-a1, -a1
			q0, q1, q2, q3 := b0, b0+b1, b0-b1, -b1
			j := k + i
			d0[j], d1[j], d2[j], d3[j] = p0, p1, p2, p3
			d4[j], d5[j], d6[j], d7[j] = p0+q0, p1+q1, p2+q2, p3+q3
			d8[j], d9[j], d10[j], d11[j] = p0-q0, p1-q1, p2-q2, p3-q3
			d12[j], d13[j], d14[j], d15[j] = -q0, -q1, -q2, -q3
		}
	}
}

package conv

// winoInput4x4 writes the transformed input tiles V = B^T d B of one 4x4
// channel plane src (16 values, row-major) into vs: its four tiles (2x2
// outputs each, tile ty*2+tx) overlap the zero-padded 6x6 plane, and
// element (r, c) of tile i goes to vs[4*r+c][i]. The operations and their
// order are those of the general path (bt4 on the rows, then bt4Tiles), so
// the results are the same to the bit; on 4x4 maps the general path spent
// more on the calls and slicing per tile row than on the arithmetic.
func winoInput4x4(vs *[16][]float32, src []float32) {
	var p [6][6]float32
	s := src[:16]
	for y := range 4 {
		for x := range 4 {
			p[y+1][x+1] = s[4*y+x]
		}
	}
	for ty := range 2 {
		var t [4][6]float32
		for x := range 6 {
			a, b, c, d := p[2*ty][x], p[2*ty+1][x], p[2*ty+2][x], p[2*ty+3][x]
			t[0][x], t[1][x], t[2][x], t[3][x] = a-c, b+c, c-b, b-d
		}
		for r := range 4 {
			for tx := range 2 {
				a, b, c, d := t[r][2*tx], t[r][2*tx+1], t[r][2*tx+2], t[r][2*tx+3]
				i := 2*ty + tx
				vs[4*r][i] = a - c
				vs[4*r+1][i] = b + c
				vs[4*r+2][i] = c - b
				vs[4*r+3][i] = b - d
			}
		}
	}
}

// winoOutput4x4 writes (adds, when acc) the 4x4 output plane dst (16
// values, row-major) of one output channel from its four tiles' products
// M: element (r, c) of tile ty*2+tx is ms[4*r+c][ty*2+tx], and the plane is
// A^T M A of each tile. The operations are those of the general path (at4,
// then at4Tiles), unrolled.
func winoOutput4x4(dst []float32, ms *[16][]float32, acc bool) {
	d := dst[:16]
	for ty := range 2 {
		// A^T M of the tile row: s[0] the even output row, s[1] the odd.
		var s [2][4][2]float32
		for c := range 4 {
			a, b, e, f := ms[c][2*ty:2*ty+2], ms[4+c][2*ty:2*ty+2], ms[8+c][2*ty:2*ty+2], ms[12+c][2*ty:2*ty+2]
			for i := range 2 {
				x, y, z, w := a[i], b[i], e[i], f[i]
				s[0][c][i] = x + y + z
				s[1][c][i] = y - z - w
			}
		}
		for rr := range 2 {
			row := d[(2*ty+rr)*4:][:4]
			t := &s[rr]
			for i := range 2 {
				y, z := t[1][i], t[2][i]
				v0, v1 := t[0][i]+y+z, y-z-t[3][i]
				if acc {
					row[2*i] += v0
					row[2*i+1] += v1
				} else {
					row[2*i], row[2*i+1] = v0, v1
				}
			}
		}
	}
}

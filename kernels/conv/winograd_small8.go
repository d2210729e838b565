package conv

// winoInput8x8 writes the transformed input tiles V = B^T d B of one 8x8
// channel plane src (64 values, row-major) into vs: its sixteen tiles
// (tile ty*4+tx) overlap the zero-padded 10x10 plane, and element (r, c)
// of tile i goes to vs[4*r+c][i]. The operations and their order are those
// of the general path (bt4 on the rows, then bt4Tiles), so the results are
// the same to the bit; fixed-size arrays spare the calls and slicing per
// tile row that cost the general path more than the arithmetic on 8x8 maps.
func winoInput8x8(vs *[16][]float32, src []float32) {
	var p [10][10]float32
	s := src[:64]
	for y := range 8 {
		copy(p[y+1][1:9], s[8*y:8*y+8])
	}
	var d [16][]float32
	for xi := range d {
		d[xi] = vs[xi][:16]
	}
	for ty := range 4 {
		var t [4][10]float32
		for x := range 10 {
			a, b, c, e := p[2*ty][x], p[2*ty+1][x], p[2*ty+2][x], p[2*ty+3][x]
			t[0][x], t[1][x], t[2][x], t[3][x] = a-c, b+c, c-b, b-e
		}
		for r := range 4 {
			d0, d1, d2, d3 := d[4*r][4*ty:4*ty+4], d[4*r+1][4*ty:4*ty+4], d[4*r+2][4*ty:4*ty+4], d[4*r+3][4*ty:4*ty+4]
			row := &t[r]
			for tx := range 4 {
				a, b, c, e := row[2*tx], row[2*tx+1], row[2*tx+2], row[2*tx+3]
				d0[tx] = a - c
				d1[tx] = b + c
				d2[tx] = c - b
				d3[tx] = b - e
			}
		}
	}
}

// winoOutput8x8 writes (adds, when acc) the 8x8 output plane dst (64
// values, row-major) of one output channel from its sixteen tiles'
// products M: element (r, c) of tile ty*4+tx is ms[4*r+c][ty*4+tx], and
// the plane is A^T M A of each tile. The operations are those of the
// general path (at4, then at4Tiles), unrolled over fixed-size arrays.
func winoOutput8x8(dst []float32, ms *[16][]float32, acc bool) {
	d := dst[:64]
	for ty := range 4 {
		// A^T M of the tile row: s[0] the even output row, s[1] the odd.
		var s [2][4][4]float32
		for c := range 4 {
			a, b, e, f := ms[c][4*ty:4*ty+4], ms[4+c][4*ty:4*ty+4], ms[8+c][4*ty:4*ty+4], ms[12+c][4*ty:4*ty+4]
			for i := range 4 {
				x, y, z, w := a[i], b[i], e[i], f[i]
				s[0][c][i] = x + y + z
				s[1][c][i] = y - z - w
			}
		}
		for rr := range 2 {
			row := d[(2*ty+rr)*8:][:8]
			t := &s[rr]
			for i := range 4 {
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

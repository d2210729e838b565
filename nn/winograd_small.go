package nn

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

// winoInputSmall enables winoInput4x4 (tests turn it off to compare with
// the general path).
var winoInputSmall = true

package conv

// winoOutputPlaneLen returns the scratch floats winoOutputPlane needs for
// a map of th x tw tiles.
func winoOutputPlaneLen(th, tw int) int {
	return 12 * th * tw
}

// winoOutputPlane applies A^T m A to all th x tw tiles of one map (tile
// (ty, i) at ms[xi][ty*tw+i]) and writes (adds, when acc) the 2x2 results
// into the oh x ow map dst (the row and column past the end of an odd map
// are dropped). It does the arithmetic of the row-by-row split path (at4
// over the tiles' rows, then over their columns), so its results are
// bit-identical to it, but each pass is one elementwise loop over the
// whole map; only the final interleaving into dst goes row by row. b is
// scratch of at least winoOutputPlaneLen(th, tw) floats.
func winoOutputPlane(dst []float32, ms *[16][]float32, oh, ow, th, tw int, acc bool, b []float32) {
	n := th * tw
	b = b[:winoOutputPlaneLen(th, tw)]
	var s0, s1 [4][]float32
	for c := range 4 {
		s0[c], s1[c] = b[2*c*n:][:n], b[(2*c+1)*n:][:n]
		at4(s0[c], s1[c], ms[c][:n], ms[4+c][:n], ms[8+c][:n], ms[12+c][:n])
	}
	// Even and odd output columns of the even (0) and odd (1) output rows.
	ye0, yo0, ye1, yo1 := b[8*n:9*n], b[9*n:10*n], b[10*n:11*n], b[11*n:12*n]
	at4(ye0, yo0, s0[0], s0[1], s0[2], s0[3])
	at4(ye1, yo1, s1[0], s1[1], s1[2], s1[3])
	dst = dst[:oh*ow]
	for ty := range th {
		k := ty * tw
		y := 2 * ty
		interleave(dst[y*ow:(y+1)*ow], ye0[k:k+tw], yo0[k:k+tw], acc)
		if y+1 < oh {
			interleave(dst[(y+1)*ow:(y+2)*ow], ye1[k:k+tw], yo1[k:k+tw], acc)
		}
	}
}

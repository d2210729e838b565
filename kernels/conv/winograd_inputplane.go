package conv

import "github.com/duel-ssl/duel/kernels/vecmath"

// winoPlaneLen returns the scratch floats winoInputPlane needs for a map
// of th x tw tiles: four column-shifted copies of the zero-padded map
// (2*th+2 rows of tw) and the sixteen rows of B^T d of all tiles.
func winoPlaneLen(th, tw int) int {
	return 4*(2*th+2)*tw + 16*th*tw
}

// winoInputPlane writes B^T d B of all th x tw tiles of the h x w map src
// (zero-padded by one on every side, tile (ty, i) at padded rows
// 2ty..2ty+3 and columns 2i..2i+3) to vs[xi][ty*tw+i]. It does the
// arithmetic of the row-by-row split path (bt4 over four padded rows, then
// bt4 over the tiles' columns), so its results are bit-identical to it,
// but each pass is one elementwise loop over the whole map: the padded map
// is stored as four copies A, B, C, D holding padded columns 2i, 2i+1,
// 2i+2, 2i+3 at i, rows ordered even rows first, then odd rows, so tile
// row ty's padded rows 2ty..2ty+3 are the blocks at ty of even, odd, even
// (shifted by a row), odd (shifted by a row). b is scratch of at least
// winoPlaneLen(th, tw) floats.
func winoInputPlane(vs *[16][]float32, src []float32, h, w, th, tw int, b []float32) {
	half := (th + 1) * tw // rows of one parity
	m := 2 * half
	n := th * tw
	b = b[:winoPlaneLen(th, tw)]
	cols := [4][]float32{b[:m], b[m : 2*m], b[2*m : 3*m], b[3*m : 4*m]}
	clear(b[:4*m])
	src = src[:h*w]
	for y := range h {
		py := y + 1
		s := (py%2)*half + py/2*tw
		ra, rb, rc, rd := cols[0][s:s+tw], cols[1][s:s+tw], cols[2][s:s+tw], cols[3][s:s+tw]
		row := src[y*w : (y+1)*w]
		if w == 2*tw {
			// Even width: split once, the shifted copies are moves.
			vecmath.Unzip(rb, rc, row)
			copy(rd[:tw-1], rb[1:])
			copy(ra[1:], rc[:tw-1])
			continue
		}
		// Image column 2k is padded column 2k+1: B at k, D at k-1.
		for k := 0; 2*k < w; k++ {
			v := row[2*k]
			rb[k] = v
			if k >= 1 {
				rd[k-1] = v
			}
		}
		// Image column 2k+1 is padded column 2k+2: A at k+1, C at k.
		for k := 0; 2*k+1 < w; k++ {
			v := row[2*k+1]
			rc[k] = v
			if k+1 < tw {
				ra[k+1] = v
			}
		}
	}
	// Vertical pass: t[q][r] holds row r of B^T d for column copy q.
	var t [4][4][]float32
	vt := b[4*m:]
	for q := range 4 {
		for r := range 4 {
			t[q][r] = vt[(4*q+r)*n:][:n]
		}
		ev, od := cols[q][:half], cols[q][half:]
		bt4(t[q][0], t[q][1], t[q][2], t[q][3], ev[:n], od[:n], ev[tw:tw+n], od[tw:tw+n])
	}
	// Horizontal pass over the tiles' four columns.
	for r := range 4 {
		bt4(vs[4*r][:n], vs[4*r+1][:n], vs[4*r+2][:n], vs[4*r+3][:n], t[0][r], t[1][r], t[2][r], t[3][r])
	}
}

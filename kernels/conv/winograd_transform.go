package conv

import "github.com/duel-ssl/duel/kernels/vecmath"

// The transforms of Winograd F(2x2, 3x3) (see winograd.go): kernels
// (G g G^T), input tiles (B^T d B) and products back to output tiles
// (A^T m A), each separable into a pass over rows and a pass over columns.

// winoFilter writes the transformed kernels of the (out, in, 3, 3) weight
// wd into u: 16 matrices of out x in, matrix xi at u[xi*winoLd(out, in):],
// over several goroutines when par.
func winoFilter(u, wd []float32, out, in int, par bool) {
	ld := winoLd(out, in)
	w := 1
	if par {
		w = workers(16 * ld)
	}
	parallelFor(out, w, func(lo, hi int) {
		var us [16][]float32
		for co := lo; co < hi; co++ {
			for xi := range us {
				us[xi] = u[xi*ld+co*in:][:in]
			}
			gtgRow(&us, wd[co*in*9:][:in*9], in)
		}
	})
}

// winoInput writes the transformed input tiles of images [n0, n0+cnt) of
// xd (geometry g) into v: 16 matrices of g.cin x T, T = cnt*th*tw tiles
// (image-major, then tile row, then tile column), matrix xi at
// v[xi*winoLd(cin, T):].
// When par it splits itself over goroutines by (channel, image) pairs. buf
// is scratch of winoBufLen floats for a single goroutine (nil: allocate).
func (g geom) winoInput(v, xd []float32, n0, cnt int, par bool, buf []float32) {
	th, tw := g.winoTiles()
	tpi := th * tw
	nt := cnt * tpi
	ld := winoLd(g.cin, nt)
	ph, pw := 2*th+2, 2*tw+2
	split := tw >= winoSplitTiles
	// 4x4 and 8x8 maps take the unrolled paths.
	small := g.h == 4 && g.w == 4 && !g.winoGeneral
	small8 := g.h == 8 && g.w == 8 && !g.winoGeneral
	w := 1
	if par {
		w = workers(16 * ld)
	}
	parallelFor(g.cin*cnt, w, func(lo, hi int) {
		// The zero-padded plane and the four rows of B^T d of a tile row.
		need := ph*pw + 4*pw
		if split {
			need = max(need, winoPlaneLen(th, tw))
		}
		b := workBuf(buf, need, w > 1)
		pad, tr := b[:ph*pw], b[ph*pw:]
		t0, t1, t2, t3 := tr[:pw], tr[pw:2*pw], tr[2*pw:3*pw], tr[3*pw:]
		var vs [16][]float32
		for t := lo; t < hi; t++ {
			ci, j := t/cnt, t%cnt
			off, cs := g.image(n0 + j)
			src := xd[off+ci*cs:][:g.h*g.w]
			if small {
				for xi := range vs {
					vs[xi] = v[xi*ld+ci*nt+j*tpi:][:tpi]
				}
				winoInput4x4(&vs, src)
				continue
			}
			if small8 {
				for xi := range vs {
					vs[xi] = v[xi*ld+ci*nt+j*tpi:][:tpi]
				}
				winoInput8x8(&vs, src)
				continue
			}
			if split && !g.winoGeneral {
				for xi := range vs {
					vs[xi] = v[xi*ld+ci*nt+j*tpi:][:tpi]
				}
				winoInputPlane(&vs, src, g.h, g.w, th, tw, b)
				continue
			}
			clear(pad)
			for y := range g.h {
				if split {
					deinterleave(pad[(y+1)*pw:][:pw], src[y*g.w:(y+1)*g.w])
				} else {
					copy(pad[(y+1)*pw+1:][:g.w], src[y*g.w:(y+1)*g.w])
				}
			}
			for xi := range vs {
				vs[xi] = v[xi*ld+ci*nt+j*tpi:][:tpi]
			}
			for ty := range th {
				r0 := pad[2*ty*pw:][:pw]
				r1 := pad[(2*ty+1)*pw:][:pw]
				r2 := pad[(2*ty+2)*pw:][:pw]
				r3 := pad[(2*ty+3)*pw:][:pw]
				bt4(t0, t1, t2, t3, r0, r1, r2, r3)
				k := ty * tw
				// Tile i of the row spans padded columns 2i..2i+3: when
				// split, even e[i], odd o[i], e[i+1], o[i+1].
				for r, row := range [4][]float32{t0, t1, t2, t3} {
					if !split {
						bt4Tiles(vs[4*r][k:k+tw], vs[4*r+1][k:k+tw], vs[4*r+2][k:k+tw], vs[4*r+3][k:k+tw], row)
						continue
					}
					e, o := row[:tw+1], row[tw+1:]
					bt4(vs[4*r][k:k+tw], vs[4*r+1][k:k+tw], vs[4*r+2][k:k+tw], vs[4*r+3][k:k+tw], e, o, e[1:], o[1:])
				}
			}
		}
	})
}

// bt4Go applies B^T to the columns (a, b, c, d): d0 = a-c, d1 = b+c,
// d2 = c-b, d3 = b-d, element by element.
func bt4Go(d0, d1, d2, d3, a, b, c, d []float32) {
	n := len(d0)
	d1, d2, d3, a, b, c, d = d1[:n], d2[:n], d3[:n], a[:n], b[:n], c[:n], d[:n]
	for i := range d0 {
		x, y, z, w := a[i], b[i], c[i], d[i]
		d0[i] = x - z
		d1[i] = y + z
		d2[i] = z - y
		d3[i] = y - w
	}
}

// bt4Tiles applies B^T to the four values t[2i:2i+4] of each tile i of a
// row (tiles overlap by two values) and writes the results to d0..d3[i].
func bt4Tiles(d0, d1, d2, d3, t []float32) {
	n := len(d0)
	d1, d2, d3 = d1[:n], d2[:n], d3[:n]
	for i := range d0 {
		q := t[2*i : 2*i+4 : 2*i+4]
		x, y, z, w := q[0], q[1], q[2], q[3]
		d0[i] = x - z
		d1[i] = y + z
		d2[i] = z - y
		d3[i] = y - w
	}
}

// deinterleave writes the image row src into the zero-padded row dst
// (one zero column left of the image, zeros right of it, 2*tw+2 columns in
// all) with its even padded columns first, then its odd ones: image column
// x is padded column x+1.
func deinterleave(dst, src []float32) {
	h := len(dst) / 2
	e, o := dst[:h], dst[h:]
	n := len(src) / 2
	src = src[:2*n+len(src)%2]
	e, o = e[:n+1], o[:n+len(src)%2]
	for i := range n {
		o[i] = src[2*i]
		e[i+1] = src[2*i+1]
	}
	if len(src)%2 == 1 {
		o[n] = src[2*n]
	}
}

// winoOutput applies the output transform to the products m (16 matrices of
// g.cout x T, as winoInput lays out tiles) of images [n0, n0+cnt) and
// writes (or adds, when acc) the 2x2 tiles into yd, channel-major (Out, N,
// OH, OW) when ycm, else (N, Out, OH, OW). When par it splits itself over
// goroutines by (channel, image) pairs. buf is as for winoInput.
func (g geom) winoOutput(yd, m []float32, n0, cnt int, ycm, acc, par bool, buf []float32) {
	th, tw := g.winoTiles()
	tpi := th * tw
	nt := cnt * tpi
	ld := winoLd(g.cout, nt)
	oh, ow := g.oh, g.ow
	ohw := oh * ow
	// 4x4 and 8x8 maps take the unrolled paths.
	small := oh == 4 && ow == 4 && !g.winoGeneral
	small8 := oh == 8 && ow == 8 && !g.winoGeneral
	w := 1
	if par {
		w = workers(16 * ld)
	}
	parallelFor(g.cout*cnt, w, func(lo, hi int) {
		// A^T m of a tile row: two rows of four values per tile.
		split := tw >= winoSplitTiles && !g.winoGeneral
		need := 10 * tw
		if split {
			need = max(need, winoOutputPlaneLen(th, tw))
		}
		b := workBuf(buf, need, w > 1)
		var s0, s1 [4][]float32
		for c := range 4 {
			s0[c], s1[c] = b[2*c*tw:][:tw], b[(2*c+1)*tw:][:tw]
		}
		ye, yo := b[8*tw:9*tw], b[9*tw:10*tw]
		var ms [16][]float32
		for t := lo; t < hi; t++ {
			co, j := t/cnt, t%cnt
			off := ((n0+j)*g.cout + co) * ohw
			if ycm {
				off = (co*g.n + n0 + j) * ohw
			}
			dst := yd[off:][:ohw]
			for xi := range ms {
				ms[xi] = m[xi*ld+co*nt+j*tpi:][:tpi]
			}
			if small {
				winoOutput4x4(dst, &ms, acc)
				continue
			}
			if small8 {
				winoOutput8x8(dst, &ms, acc)
				continue
			}
			if split {
				winoOutputPlane(dst, &ms, oh, ow, th, tw, acc, b)
				continue
			}
			for ty := range th {
				k := ty * tw
				for c := range 4 {
					at4(s0[c], s1[c], ms[c][k:k+tw], ms[4+c][k:k+tw], ms[8+c][k:k+tw], ms[12+c][k:k+tw])
				}
				y := 2 * ty
				if tw < winoSplitTiles {
					at4Tiles(dst[y*ow:(y+1)*ow], s0, acc)
					if y+1 < oh {
						at4Tiles(dst[(y+1)*ow:(y+2)*ow], s1, acc)
					}
					continue
				}
				// The even and odd output columns of each row.
				at4(ye, yo, s0[0], s0[1], s0[2], s0[3])
				interleave(dst[y*ow:(y+1)*ow], ye, yo, acc)
				if y+1 < oh {
					at4(ye, yo, s1[0], s1[1], s1[2], s1[3])
					interleave(dst[(y+1)*ow:(y+2)*ow], ye, yo, acc)
				}
			}
		}
	})
}

// at4Go applies A^T to the columns (a, b, c, d): s0 = a+b+c, s1 = b-c-d,
// element by element.
func at4Go(s0, s1, a, b, c, d []float32) {
	n := len(s0)
	s1, a, b, c, d = s1[:n], a[:n], b[:n], c[:n], d[:n]
	for i := range s0 {
		x, y, z, w := a[i], b[i], c[i], d[i]
		s0[i] = x + y + z
		s1[i] = y - z - w
	}
}

// at4Tiles applies A^T to the four values s[0..3][i] of each tile i of a
// row and writes (adds, when acc) the two results to row[2i] and row[2i+1]
// (the second is dropped past the end of an odd row).
func at4Tiles(row []float32, s [4][]float32, acc bool) {
	n := len(row) / 2
	a, b, c, d := s[0][:n], s[1][:n], s[2][:n], s[3][:n]
	if acc {
		for i := range a {
			y, z := b[i], c[i]
			q := row[2*i : 2*i+2 : 2*i+2]
			q[0] += a[i] + y + z
			q[1] += y - z - d[i]
		}
	} else {
		for i := range a {
			y, z := b[i], c[i]
			q := row[2*i : 2*i+2 : 2*i+2]
			q[0] = a[i] + y + z
			q[1] = y - z - d[i]
		}
	}
	if len(row)%2 == 1 {
		v := s[0][n] + s[1][n] + s[2][n]
		if acc {
			row[2*n] += v
		} else {
			row[2*n] = v
		}
	}
}

// interleave writes (adds, when acc) e[i] to row[2i] and o[i] to
// row[2i+1], for the columns of row (o's last value is dropped past the end
// of an odd row).
func interleave(row, e, o []float32, acc bool) {
	n := len(row) / 2
	e, o = e[:n+len(row)%2], o[:n]
	if acc {
		vecmath.ZipAdd(row, e[:n], o)
		if len(row)%2 == 1 {
			row[2*n] += e[n]
		}
		return
	}
	vecmath.Zip(row, e[:n], o)
	if len(row)%2 == 1 {
		row[2*n] = e[n]
	}
}

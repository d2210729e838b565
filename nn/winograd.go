package nn

// Winograd F(2x2, 3x3) for the 3x3 stride-1 padding-1 convolutions of a
// ResNet (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2015). The output is cut into 2x2 tiles; each tile is computed
// from a 4x4 input tile d and the 3x3 kernel g as
//
//	Y = A^T [(G g G^T) ⊙ (B^T d B)] A,
//
// so that, after the transforms, the convolution is 16 independent GEMMs
// (one per element xi of the 4x4 transformed tile) of the transformed
// kernels U[xi] (Out x In) with the transformed input tiles V[xi] (In x
// tiles): 16 multiplications per 2x2 outputs per (in, out) channel pair
// instead of 36, 2.25 times fewer flops in the GEMMs. The transforms are
// additions only (and halvings in G), so the result stays within float32
// rounding of the direct convolution.
//
//	B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//	G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//	A^T = [1 1 1 0; 0 1 -1 -1]
//
// The input gradient of such a convolution is the same convolution of the
// output gradient with the flipped, transposed kernel, so it reuses the
// forward code (winoFilter's flip). The weight gradient is the adjoint of
// the same pipeline (winograd_grad.go).

// winoTiles returns the number of 2x2 output tiles per image of g.
func (g convGeom) winoTiles() (th, tw int) { return (g.oh + 1) / 2, (g.ow + 1) / 2 }

// Chunking of the Winograd pipeline: a chunk of images holds at most
// winoBudget floats of transformed input and products (16*(In+Out) per
// tile), but at least winoMinTiles tiles, so that each of its 16 GEMMs has
// enough columns.
const (
	winoBudget   = 1 << 20
	winoMinTiles = 128
)

// winoChunk returns how many images one Winograd chunk holds.
func (g convGeom) winoChunk() int {
	th, tw := g.winoTiles()
	tpi := th * tw
	tiles := max(winoMinTiles, winoBudget/(16*(g.cin+g.cout)))
	return max(1, min(g.n, (tiles+tpi-1)/tpi))
}

// winoFlops returns the flops of the 16 GEMMs over the whole batch.
func (g convGeom) winoFlops() float64 {
	th, tw := g.winoTiles()
	return 2 * 16 * float64(g.cout) * float64(g.cin) * float64(g.n*th*tw)
}

// winoFilter writes the transformed kernels of the (out, in, 3, 3) weight
// wd into u: 16 matrices of out x in, matrix xi at u[xi*out*in:]. When
// flip, it writes instead the transformed kernels of the flipped,
// transposed weight (in, out, 3, 3), w'[ci][co][a][b] = w[co][ci][2-a][2-b],
// the kernel of the input gradient: 16 matrices of in x out. Flipping g
// swaps the first and last rows of G g, so U' is U with rows and columns 0
// and 3 of every tile swapped, transposed.
func winoFilter(u, wd []float32, out, in int, flip bool, par bool) {
	ld := out * in
	w := 1
	if par {
		w = workers(16 * ld)
	}
	perm := [4]int{0, 1, 2, 3}
	if flip {
		perm = [4]int{3, 1, 2, 0}
	}
	parallelFor(out, w, func(lo, hi int) {
		for co := lo; co < hi; co++ {
			for ci := range in {
				g := wd[(co*in+ci)*9:][:9]
				// Gg: 4 x 3.
				var t [4][3]float32
				for j := range 3 {
					a, b, c := g[j], g[3+j], g[6+j]
					t[0][j] = a
					t[1][j] = 0.5 * (a + b + c)
					t[2][j] = 0.5 * (a - b + c)
					t[3][j] = c
				}
				off := co*in + ci
				if flip {
					off = ci*out + co
				}
				for r := range 4 {
					a, b, c := t[r][0], t[r][1], t[r][2]
					row := [4]float32{a, 0.5 * (a + b + c), 0.5 * (a - b + c), c}
					pr := perm[r] * 4
					for q := range 4 {
						u[(pr+perm[q])*ld+off] = row[q]
					}
				}
			}
		}
	})
}

// winoInput writes the transformed input tiles of images [n0, n0+cnt) of
// xd (geometry g) into v: 16 matrices of g.cin x T, T = cnt*th*tw tiles
// (image-major, then tile row, then tile column), matrix xi at v[xi*cin*T:].
// When par it splits itself over goroutines by (channel, image) pairs.
func (g convGeom) winoInput(v, xd []float32, n0, cnt int, par bool) {
	th, tw := g.winoTiles()
	tpi := th * tw
	nt := cnt * tpi
	ld := g.cin * nt
	ph, pw := 2*th+2, 2*tw+2
	w := 1
	if par {
		w = workers(16 * ld)
	}
	parallelFor(g.cin*cnt, w, func(lo, hi int) {
		// The zero-padded plane and the four rows of B^T d of a tile row.
		buf := make([]float32, ph*pw+4*pw)
		pad, tr := buf[:ph*pw], buf[ph*pw:]
		t0, t1, t2, t3 := tr[:pw], tr[pw:2*pw], tr[2*pw:3*pw], tr[3*pw:]
		var vs [16][]float32
		for t := lo; t < hi; t++ {
			ci, j := t/cnt, t%cnt
			off, cs := g.image(n0 + j)
			src := xd[off+ci*cs:][:g.h*g.w]
			clear(pad)
			for y := range g.h {
				copy(pad[(y+1)*pw+1:][:g.w], src[y*g.w:(y+1)*g.w])
			}
			for xi := range vs {
				vs[xi] = v[xi*ld+ci*nt+j*tpi:][:tpi]
			}
			for ty := range th {
				r0 := pad[2*ty*pw:][:pw]
				r1 := pad[(2*ty+1)*pw:][:pw]
				r2 := pad[(2*ty+2)*pw:][:pw]
				r3 := pad[(2*ty+3)*pw:][:pw]
				for c := range pw {
					a, b, d, e := r0[c], r1[c], r2[c], r3[c]
					t0[c] = a - d
					t1[c] = b + d
					t2[c] = d - b
					t3[c] = b - e
				}
				base := ty * tw
				for tx := range tw {
					c := 2 * tx
					k := base + tx
					for r, row := range [4][]float32{t0, t1, t2, t3} {
						q := row[c : c+4 : c+4]
						vs[4*r][k] = q[0] - q[2]
						vs[4*r+1][k] = q[1] + q[2]
						vs[4*r+2][k] = q[2] - q[1]
						vs[4*r+3][k] = q[1] - q[3]
					}
				}
			}
		}
	})
}

// winoOutput applies the output transform to the products m (16 matrices of
// g.cout x T, as winoInput lays out tiles) of images [n0, n0+cnt) and
// writes (or adds, when acc) the 2x2 tiles into yd, channel-major (Out, N,
// OH, OW) when ycm, else (N, Out, OH, OW). When par it splits itself over
// goroutines by (channel, image) pairs.
func (g convGeom) winoOutput(yd, m []float32, n0, cnt int, ycm, acc, par bool) {
	th, tw := g.winoTiles()
	tpi := th * tw
	nt := cnt * tpi
	ld := g.cout * nt
	oh, ow := g.oh, g.ow
	ohw := oh * ow
	w := 1
	if par {
		w = workers(16 * ld)
	}
	parallelFor(g.cout*cnt, w, func(lo, hi int) {
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
			for ty := range th {
				for tx := range tw {
					k := ty*tw + tx
					// A^T m: two rows of four.
					var s0, s1 [4]float32
					for c := range 4 {
						a, b, d, e := ms[c][k], ms[4+c][k], ms[8+c][k], ms[12+c][k]
						s0[c] = a + b + d
						s1[c] = b - d - e
					}
					y00 := s0[0] + s0[1] + s0[2]
					y01 := s0[1] - s0[2] - s0[3]
					y10 := s1[0] + s1[1] + s1[2]
					y11 := s1[1] - s1[2] - s1[3]
					y, x := 2*ty, 2*tx
					p := y*ow + x
					full := y+1 < oh && x+1 < ow
					if acc {
						dst[p] += y00
						if full {
							dst[p+1] += y01
							dst[p+ow] += y10
							dst[p+ow+1] += y11
							continue
						}
						if x+1 < ow {
							dst[p+1] += y01
						}
						if y+1 < oh {
							dst[p+ow] += y10
						}
						continue
					}
					dst[p] = y00
					if full {
						dst[p+1] = y01
						dst[p+ow] = y10
						dst[p+ow+1] = y11
						continue
					}
					if x+1 < ow {
						dst[p+1] = y01
					}
					if y+1 < oh {
						dst[p+ow] = y10
					}
				}
			}
		}
	})
}

// winoConv computes the 3x3 stride-1 padding-1 convolution of xd (geometry
// g, input layout g.xcm) with the transformed kernels u (winoFilter: 16
// matrices of g.cout x g.cin) into yd (layout ycm), adding to it when acc.
// The batch is split into chunks of images (coarsePlan), each transformed,
// multiplied (16 GEMMs) and transformed back by one goroutine.
func (c *Conv2d) winoConv(g convGeom, u, xd, yd []float32, ycm, acc bool) {
	th, tw := g.winoTiles()
	tpi := th * tw
	chunk, threads, sg, par := coarsePlan(g.n, g.winoChunk(), g.winoFlops())
	vs := scratchSet(c.arena, threads, 16*g.cin*chunk*tpi)
	defer putScratchSet(c.arena, vs)
	ms := scratchSet(c.arena, threads, 16*g.cout*chunk*tpi)
	defer putScratchSet(c.arena, ms)
	uld := g.cout * g.cin
	runChunks(g.n, chunk, threads, false, func(w, n0, cnt int) {
		nt := cnt * tpi
		v, m := vs[w], ms[w]
		g.winoInput(v, xd, n0, cnt, par)
		for xi := range 16 {
			sg(false, false, g.cout, nt, g.cin, 1, u[xi*uld:], g.cin, v[xi*g.cin*nt:], nt, 0, m[xi*g.cout*nt:], nt)
		}
		g.winoOutput(yd, m, n0, cnt, ycm, acc, par)
	})
}

// inputGradWinograd computes the input gradient dx (layout g.xcm, added to
// when acc) of the Winograd convolution g from the output gradient dy
// (channel-major): the same convolution of dy with the flipped, transposed
// kernel.
func (c *Conv2d) inputGradWinograd(g convGeom, wd, dy, dx []float32, acc bool) {
	u := c.arena.getScratch(16 * g.cout * g.cin)
	defer c.arena.putScratch(u)
	winoFilter(u, wd, g.cout, g.cin, true, true)
	tg := convGeom{n: g.n, cin: g.cout, h: g.oh, w: g.ow, cout: g.cin, k: 3, s: 1, p: 1, oh: g.h, ow: g.w, xcm: true}
	c.winoConv(tg, u, dy, dx, g.xcm, acc)
}

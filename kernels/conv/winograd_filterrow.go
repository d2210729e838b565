package conv

// Row-at-a-time forms of the Winograd F(2x2, 3x3) kernel transform
// (G g G^T) and its adjoint (G^T u G), for all input channels of one
// output channel. They do the arithmetic of gtgRef and gtdgRef in the same
// order (bit-identical results) with the sixteen rows held in local slices
// of one length, so the loops carry no bounds checks and no small arrays.

// gtgRow writes G g G^T of the in kernels g = kernels[9*ci:9*ci+9] to
// us[xi][ci], ci < in.
func gtgRow(us *[16][]float32, kernels []float32, in int) {
	kernels = kernels[:9*in]
	u0, u1, u2, u3 := us[0][:in], us[1][:in], us[2][:in], us[3][:in]
	u4, u5, u6, u7 := us[4][:in], us[5][:in], us[6][:in], us[7][:in]
	u8, u9, u10, u11 := us[8][:in], us[9][:in], us[10][:in], us[11][:in]
	u12, u13, u14, u15 := us[12][:in], us[13][:in], us[14][:in], us[15][:in]
	for j := range in {
		g := kernels[9*j : 9*j+9 : 9*j+9]
		a0, a1, a2 := g[0], g[1], g[2]
		m0, m1, m2 := g[3], g[4], g[5]
		d0, d1, d2 := g[6], g[7], g[8]
		b0 := 0.5 * (a0 + m0 + d0)
		b1 := 0.5 * (a1 + m1 + d1)
		b2 := 0.5 * (a2 + m2 + d2)
		c0, c1, c2 := b0-m0, b1-m1, b2-m2
		h := 0.5 * (a0 + a1 + a2)
		u0[j], u1[j], u2[j], u3[j] = a0, h, h-a1, a2
		h = 0.5 * (b0 + b1 + b2)
		u4[j], u5[j], u6[j], u7[j] = b0, h, h-b1, b2
		h = 0.5 * (c0 + c1 + c2)
		u8[j], u9[j], u10[j], u11[j] = c0, h, h-c1, c2
		h = 0.5 * (d0 + d1 + d2)
		u12[j], u13[j], u14[j], u15[j] = d0, h, h-d1, d2
	}
}

// gtdgRow writes (adds, when acc) G^T u G of the in tiles u[xi] =
// rows[xi][ci] to dst[9*ci:9*ci+9] (3x3, row-major), ci < in.
func gtdgRow(dst []float32, rows *[16][]float32, in int, acc bool) {
	dst = dst[:9*in]
	r0, r1, r2, r3 := rows[0][:in], rows[1][:in], rows[2][:in], rows[3][:in]
	r4, r5, r6, r7 := rows[4][:in], rows[5][:in], rows[6][:in], rows[7][:in]
	r8, r9, r10, r11 := rows[8][:in], rows[9][:in], rows[10][:in], rows[11][:in]
	r12, r13, r14, r15 := rows[12][:in], rows[13][:in], rows[14][:in], rows[15][:in]
	for j := range in {
		// u G: 4 x 3, row by row.
		s := 0.5 * (r1[j] + r2[j])
		h00, h01, h02 := r0[j]+s, 0.5*(r1[j]-r2[j]), s+r3[j]
		s = 0.5 * (r5[j] + r6[j])
		h10, h11, h12 := r4[j]+s, 0.5*(r5[j]-r6[j]), s+r7[j]
		s = 0.5 * (r9[j] + r10[j])
		h20, h21, h22 := r8[j]+s, 0.5*(r9[j]-r10[j]), s+r11[j]
		s = 0.5 * (r13[j] + r14[j])
		h30, h31, h32 := r12[j]+s, 0.5*(r13[j]-r14[j]), s+r15[j]
		// G^T (u G), column by column.
		s0 := 0.5 * (h10 + h20)
		s1 := 0.5 * (h11 + h21)
		s2 := 0.5 * (h12 + h22)
		d := dst[9*j : 9*j+9 : 9*j+9]
		g0, g1, g2 := h00+s0, h01+s1, h02+s2
		g3, g4, g5 := 0.5*(h10-h20), 0.5*(h11-h21), 0.5*(h12-h22)
		g6, g7, g8 := s0+h30, s1+h31, s2+h32
		if acc {
			d[0] += g0
			d[1] += g1
			d[2] += g2
			d[3] += g3
			d[4] += g4
			d[5] += g5
			d[6] += g6
			d[7] += g7
			d[8] += g8
		} else {
			d[0], d[1], d[2] = g0, g1, g2
			d[3], d[4], d[5] = g3, g4, g5
			d[6], d[7], d[8] = g6, g7, g8
		}
	}
}

package gemm

// packA copies alpha*op(A)[i0:i0+mc, p0:p0+kc] into dst as ceil(mc/mr)
// micro-panels of mr rows; panel q holds, for each p < kc, the mr values
// alpha*op(A)[i0+q*mr+i, p0+p] at dst[q*mr*kc+p*mr+i]. Rows past mc are
// zero.
func packA(dst []float32, a []float32, lda int, trans bool, i0, mc, p0, kc, mr int, alpha float32) {
	if alpha != 1 {
		defer scale(dst[:ceilDiv(mc, mr)*mr*kc], alpha)
	}
	q0 := 0
	if trans {
		// op(A)[i, p] = a[p*lda+i]: each k step is a contiguous run of rows;
		// pack all whole panels reading each row of A^T once.
		q0 = mc / mr
		packRows(dst, a[p0*lda+i0:], mr, lda, kc, q0)
	}
	for q := q0; q*mr < mc; q++ {
		panel := dst[q*mr*kc : (q+1)*mr*kc]
		rows := min(mr, mc-q*mr)
		r0 := i0 + q*mr
		if trans {
			for p := 0; p < kc; p++ {
				src := a[(p0+p)*lda+r0 : (p0+p)*lda+r0+rows]
				d := panel[p*mr : p*mr+mr]
				copy(d, src)
				clear(d[rows:])
			}
			continue
		}
		// op(A)[i, p] = a[i*lda+p]: interleave the rows of the panel.
		if rows == mr {
			interleave(panel, a[r0*lda+p0:], mr, lda, kc)
			continue
		}
		clear(panel)
		for i := 0; i < rows; i++ {
			src := a[(r0+i)*lda+p0 : (r0+i)*lda+p0+kc]
			for p, v := range src {
				panel[p*mr+i] = v
			}
		}
	}
}

// packB copies the micro-panels q0 <= q < q1 of op(B)[p0:p0+kc, j0:j0+nc]
// into dst; panel q holds, for each p < kc, the nr values
// op(B)[p0+p, j0+q*nr+j] at dst[q*nr*kc+p*nr+j]. Columns past nc are zero.
func packB(dst []float32, b []float32, ldb int, trans bool, p0, kc, j0, nc, nr, q0, q1 int) {
	for q := q0; q < q1; q++ {
		panel := dst[q*nr*kc : (q+1)*nr*kc]
		cols := min(nr, nc-q*nr)
		c0 := j0 + q*nr
		switch {
		case !trans && cols == nr && copyPanelAsm(panel, b[p0*ldb+c0:], nr, ldb, kc):
			// A full panel copied by assembly (AVX2, 16 wide).
		case !trans:
			// op(B)[p, j] = b[p*ldb+j]: each k step is a contiguous run of columns.
			for p := 0; p < kc; p++ {
				d := panel[p*nr : p*nr+nr]
				copy(d, b[(p0+p)*ldb+c0:(p0+p)*ldb+c0+cols])
				clear(d[cols:])
			}
		case cols == nr:
			// op(B)[p, j] = b[j*ldb+p]: interleave the columns of the panel.
			interleave(panel, b[c0*ldb+p0:], nr, ldb, kc)
		default:
			clear(panel)
			for j := 0; j < cols; j++ {
				src := b[(c0+j)*ldb+p0 : (c0+j)*ldb+p0+kc]
				for p, v := range src {
					panel[p*nr+j] = v
				}
			}
		}
	}
}

// scale multiplies s by alpha.
func scale(s []float32, alpha float32) {
	for i := range s {
		s[i] *= alpha
	}
}

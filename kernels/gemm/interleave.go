package gemm

// interleave does dst[p*w+i] = src[i*ld+p] for p < kc and i < w: it packs w
// rows of a row-major matrix (stride ld) into a panel of kc steps of w
// values. It uses an assembly routine when one exists for w (see
// interleaveAsm) and plain Go otherwise.
func interleave(dst, src []float32, w, ld, kc int) {
	if kc == 0 {
		return
	}
	_ = dst[kc*w-1]
	_ = src[(w-1)*ld+kc-1]
	if interleaveAsm(dst, src, w, ld, kc) {
		return
	}
	for i := 0; i < w; i++ {
		row := src[i*ld : i*ld+kc]
		for p, v := range row {
			dst[p*w+i] = v
		}
	}
}

// packRows packs panels micro-panels of w columns from kc rows of src
// (stride ld): dst[q*w*kc+p*w : +w] = src[p*ld+q*w : +w] for p < kc and
// q < panels. It reads each row once, front to back, which matters when ld
// is a large power of two. It uses an assembly routine when one exists.
func packRows(dst, src []float32, w, ld, kc, panels int) {
	if kc == 0 || panels == 0 {
		return
	}
	_ = dst[panels*w*kc-1]
	_ = src[(kc-1)*ld+panels*w-1]
	if packRowsAsm(dst, src, w, ld, kc, panels) {
		return
	}
	for p := 0; p < kc; p++ {
		row := src[p*ld : p*ld+panels*w]
		for q := 0; q < panels; q++ {
			copy(dst[q*w*kc+p*w:q*w*kc+p*w+w], row[q*w:q*w+w])
		}
	}
}

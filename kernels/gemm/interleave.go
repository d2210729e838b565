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

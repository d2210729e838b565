//go:build amd64 && !noasm

package memory

import (
	"math"
	"unsafe"

	"github.com/duel-ssl/duel/internal/cpu"
)

// unitAVX512OK: the AVX-512 normalisation and grid kernels run
// (internal/cpu allows AVX-512: the CPU has it and DUEL_ISA does not ask
// for less than avx512). There are no AVX2 versions: the Go loops run
// under DUEL_ISA=avx2.
var unitAVX512OK = cpu.AllowAVX512()

// normKernel is the normalisation kernel normalizeRows uses (nil: the Go
// one), gridKernel the grid kernel of gridRow (nil: the Go loop).
var (
	normKernel = pickUnit[normFunc](normalizeAsm512)
	gridKernel = pickUnit[gridFunc](gridRowAsm512)
)

// pickUnit returns kern where unitAVX512OK, else nil.
func pickUnit[F any](kern F) F {
	if unitAVX512OK {
		return kern
	}
	var none F
	return none
}

// sumSquares8AVX512 adds, for each of the 8 rows r at src + r*z, the
// squares of its first n components to sums[r], in their order (lane r of
// one vector of sums), n a multiple of 8. Its equivalent Go loop:
//
//	for c := 0; c < n; c++ {
//		for r := 0; r < 8; r++ {
//			v := float64(src[r*z+c])
//			sums[r] += v * v
//		}
//	}
//
//go:noescape
func sumSquares8AVX512(src *float32, z, n int, sums *[normRows]float64)

// scaleRowAVX512 is scaleRow on n components, n a multiple of 16.
//
//go:noescape
func scaleRowAVX512(dst, src *float32, n int, inv float64)

// gridRowAVX512 writes int16(gridOf(src[c])) to dst[c] for c < n, n a
// multiple of 16: the same float64 products and sums (2048*x, + 1/2,
// + 4096), truncated to int32, less 4096.
//
//go:noescape
func gridRowAVX512(dst *int16, src *float32, n int)

// normalizeAsm512 is normalize8Go with the AVX-512 kernels.
func normalizeAsm512(dst, src []float32, z int) bool {
	if len(src) < normRows*z || len(dst) < normRows*z {
		panic("memory: normalizeAsm512: short rows")
	}
	var sums [normRows]float64
	n := z &^ 7
	if n > 0 {
		sumSquares8AVX512(unsafe.SliceData(src), z, n, &sums)
	}
	for r := range sums { // the last components, in order
		for _, v := range src[r*z+n : (r+1)*z] {
			sums[r] += float64(v) * float64(v)
		}
	}
	if !sumsOK(sums[:]) {
		return false
	}
	m := z &^ 15
	for r, ss := range sums {
		inv := 1 / math.Sqrt(ss)
		d, s := dst[r*z:(r+1)*z], src[r*z:(r+1)*z]
		if m > 0 {
			scaleRowAVX512(unsafe.SliceData(d), unsafe.SliceData(s), m, inv)
		}
		scaleRow(d[m:], s[m:], inv)
	}
	return true
}

// gridRowAsm512 runs gridRowAVX512 on slices of equal length, a multiple
// of 16.
func gridRowAsm512(dst []int16, src []float32) {
	if len(dst) != len(src) || len(src)%16 != 0 {
		panic("memory: gridRowAsm512: bad lengths")
	}
	if len(src) > 0 {
		gridRowAVX512(unsafe.SliceData(dst), unsafe.SliceData(src), len(src))
	}
}

package gemm

import "unsafe"

// Register tile of the pure-Go micro-kernel.
const (
	mrGeneric = 4
	nrGeneric = 4
)

// genericKernel is the pure-Go micro-kernel for a 4x4 tile; it runs on any
// CPU and is the reference the assembly kernels are tested against.
var genericKernel = &kernel{
	name: "generic",
	mr:   mrGeneric, nr: nrGeneric, lanes: 1,
	micro: kernelGeneric, bInPlace: true,
}

// kernelGeneric implements microKernel for a 4x4 tile in plain Go.
func kernelGeneric(kc int, a, b, c *float32, ldb, ldc int, beta float32) {
	ap := unsafe.Slice(a, kc*mrGeneric)
	bp := unsafe.Slice(b, max(0, (kc-1)*ldb+nrGeneric))
	var c00, c01, c02, c03 float32
	var c10, c11, c12, c13 float32
	var c20, c21, c22, c23 float32
	var c30, c31, c32, c33 float32
	for p := 0; p < kc; p++ {
		av := ap[p*mrGeneric : p*mrGeneric+mrGeneric : p*mrGeneric+mrGeneric]
		bv := bp[p*ldb : p*ldb+nrGeneric : p*ldb+nrGeneric]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	acc := [mrGeneric][nrGeneric]float32{
		{c00, c01, c02, c03},
		{c10, c11, c12, c13},
		{c20, c21, c22, c23},
		{c30, c31, c32, c33},
	}
	cs := unsafe.Slice(c, (mrGeneric-1)*ldc+nrGeneric)
	for i := range acc {
		row := cs[i*ldc : i*ldc+nrGeneric]
		if beta == 0 {
			copy(row, acc[i][:])
			continue
		}
		for j := range row {
			row[j] = acc[i][j] + beta*row[j]
		}
	}
}

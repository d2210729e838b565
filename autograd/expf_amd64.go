//go:build amd64 && !noasm

package autograd

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 exponential kernel; tests may clear it to run
// the plain-Go reference.
var useAVX2 = cpu.X86.HasAVX2

// expShiftAVX2 is expShiftGo on whole blocks of 8 elements, bit for bit
// (see expf_amd64.s); it stops at the first block holding a value outside
// the polynomial's range and returns how many elements it did, adding their
// sum into acc.
//
//go:noescape
func expShiftAVX2(dst, src []float32, shift float32, acc *[4]float64) int

//go:build amd64 && !noasm

package vecmath

import "github.com/duel-ssl/duel/internal/cpu"

// useAVX2 selects the AVX2 exponential kernel, set once at initialisation:
// internal/cpu allows AVX2 (the CPU has it and DUEL_ISA is not generic).
var useAVX2 = cpu.AllowAVX2()

// expShiftAVX2 is expShiftGo on whole blocks of 8 elements, bit for bit
// (see exp_amd64.s); it stops at the first block holding a value outside
// the polynomial's range and returns how many elements it did, adding their
// sum into acc.
//
//go:noescape
func expShiftAVX2(dst, src []float32, shift float32, acc *[4]float64) int

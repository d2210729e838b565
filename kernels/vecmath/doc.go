// Package vecmath holds elementwise float32 math kernels shared by the
// tensor CPU backend and autograd: a float32 exponential (Expf, and
// ExpShift over slices with an AVX2 kernel), the normalisation and ReLU
// loops, and the check of a unit row (UnitSquares: the squared norm in
// float64 and whether every value lies in [-1, 1]).
//
// Every assembly kernel sits beside a plain-Go reference that computes the
// same bits, and is tested against it on random, odd and zero lengths with
// special values. The assembly runs when the CPU has AVX2, unless the
// environment variable DUEL_ISA=generic (read by internal/cpu, see
// cpu.ISA) or the noasm build tag asks for the Go loops.
package vecmath

// ISA names the variant of the kernels in use: "avx2" or "generic".
func ISA() string {
	if useAVX2 {
		return "avx2"
	}
	return "generic"
}

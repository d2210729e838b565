package igemm

// kernel names the code that computes the MR x NR tiles of C.
type kernel uint8

const (
	kernGeneric kernel = iota // pure Go, one row of C at a time (dotsRow)
	kernAVX2                  // dotsAVX2: VPMADDWD + VPADDD on ymm
	kernVNNI                  // dotsVNNI: AVX-512 VNNI VPDPWSSD on zmm
)

// String returns the kernel's name as Kernel reports it.
func (kn kernel) String() string {
	switch kn {
	case kernAVX2:
		return "avx2"
	case kernVNNI:
		return "avx512-vnni"
	}
	return "generic"
}

// active is the kernel Mul runs: the best one this build, CPU and DUEL_ISA
// allow (available[0]). It is set once at package initialisation.
var active = available[0]

// Accelerated reports whether Mul runs an assembly kernel (AVX-512 VNNI or
// AVX2), rather than the pure-Go one.
func Accelerated() bool { return active != kernGeneric }

// Kernel returns the name of the kernel Mul runs: "avx512-vnni", "avx2" or
// "generic", for benchmarks and diagnostics.
func Kernel() string { return active.String() }

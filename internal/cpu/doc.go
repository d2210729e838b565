// Package cpu is the one place that knows the CPU duel runs on. It reads
// the processor once (CPUID and XGETBV on amd64) and tells the kernel
// families what they may use, so that no package parses DUEL_ISA or asks
// golang.org/x/sys/cpu on its own.
//
// Detect returns what was found: the vendor, family, model and stepping
// (CPUID leaf 1, extended family and model included), the brand string
// (leaves 0x80000002-0x80000004), the cache sizes (Intel: leaf 4; AMD:
// leaf 0x8000001D, else the older leaves 0x80000005 and 0x80000006), the
// vector features, whether the operating system saves the YMM, ZMM and AMX
// register state (XGETBV), a microarchitecture name where the family and
// model are known, and the number of 512-bit FMA units per core where it
// can be inferred (see FMA512Units). Key names the processor for tuning
// files.
//
// ISA is the instruction-set level the kernels run at: the best level
// the CPU and the operating system support (Info.Best), lowered by the
// environment variable DUEL_ISA (EnvISA), read once per process. Accepted
// values are avx512, avx2 and generic, in any case, surrounding blanks
// ignored; asking for more than the machine has gives the best level below
// it. DUEL_ISA=amx raises the level to AMX (Info.Max: the bfloat16
// products on AMX tiles, kernels/gemm) where the processor and the
// operating system have it; AMX is opt-in until its kernels have run on
// such a processor. Any other value is an error of the user's that must not pass
// silently: it prints one warning on stderr naming DUEL_ISA, the value and
// the accepted ones, and the best level is used. AllowAMX, AllowAVX512 and
// AllowAVX2 are the tests the kernel packages make; a kernel that needs more than
// the level's features (AVX-512 DQ, BW, VNNI) also checks Detect's fields.
//
// In a build for another architecture, or with the noasm build tag,
// Detect returns the zero Info and ISA is Generic: every kernel family
// then runs its plain-Go code.
package cpu

package cpu

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// EnvISA is the environment variable that lowers the level the kernels run
// at (avx512, avx2, neon or generic), or raises it to amx (see the package
// documentation).
const EnvISA = "DUEL_ISA"

// Level is an instruction-set level of the kernels; a higher level
// includes the lower ones.
type Level int

// The levels, lowest first.
const (
	Generic Level = iota // plain Go
	NEON                 // arm64's Advanced SIMD, 128-bit vectors (only an arm64 CPU reaches it)
	AVX2                 // AVX2 and FMA, 256-bit vectors
	AVX512               // AVX-512 F and VL on top of AVX2, 512-bit vectors
	AMX                  // AMX tiles with bfloat16 products on top of AVX512 (opt-in: DUEL_ISA=amx)
)

// levelNames are the names of the levels, as DUEL_ISA spells them.
var levelNames = [...]string{Generic: "generic", NEON: "neon", AVX2: "avx2", AVX512: "avx512", AMX: "amx"}

// String returns the level's name: "generic", "neon", "avx2", "avx512" or
// "amx".
func (l Level) String() string {
	if l >= 0 && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ISA returns the level the kernels run at: the best this processor
// supports by default (Info.Best), lowered by DUEL_ISA, or AMX when
// DUEL_ISA=amx asks for it and the processor has it (Info.Max). It is
// decided on the first call; an unknown DUEL_ISA prints its warning then.
func ISA() Level { return isa() }

// AllowAVX512 reports whether the kernels may use AVX-512 (F and VL; check
// Detect for DQ, BW, VNNI, ...): the CPU and the operating system support
// it and DUEL_ISA does not ask for less.
func AllowAVX512() bool { return ISA() >= AVX512 }

// AllowAMX reports whether the kernels may use AMX tiles with bfloat16
// products: DUEL_ISA=amx asked for them, and the CPU and the operating
// system support them. The kernels must still ask Linux for the tile data
// state (arch_prctl) before the first tile instruction.
func AllowAMX() bool { return ISA() >= AMX }

// AllowAVX2 reports whether the kernels may use AVX2 and FMA: the CPU and
// the operating system support them and DUEL_ISA is not generic.
func AllowAVX2() bool { return ISA() >= AVX2 }

// isa decides the level once, warning on stderr about a bad DUEL_ISA.
var isa = sync.OnceValue(func() Level {
	l, warning := decideISA(envISA(), Detect().Best(), Detect().Max())
	if warning != "" {
		fmt.Fprintln(os.Stderr, warning)
	}
	return l
})

// decideISA returns the level for the DUEL_ISA value env on a machine
// whose default level is best and highest level max (best, or AMX above
// it), and a warning to print when env is not one of the accepted values.
// Empty means best; a known value gives the lower of it and max (NEON
// only where max is NEON, an arm64 CPU: elsewhere it means Generic); an
// unknown one gives best, with the warning.
func decideISA(env string, best, max Level) (Level, string) {
	want := strings.ToLower(strings.TrimSpace(env))
	if want == "" {
		return best, ""
	}
	for l, name := range levelNames {
		if want == name {
			got := min(Level(l), max)
			if got == NEON && max != NEON {
				got = Generic // x86 has no NEON kernels: below AVX2 is plain Go
			}
			return got, ""
		}
	}
	return best, fmt.Sprintf("duel: %s=%q is not one of amx, avx512, avx2, neon, generic (any case); using %s, the best this machine supports by default",
		EnvISA, env, best)
}

// envISA returns the value of DUEL_ISA.
func envISA() string { return os.Getenv(EnvISA) }

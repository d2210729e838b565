package cpu

import (
	"strings"
	"testing"
)

// TestDecideISA checks DUEL_ISA's values on machines of every level.
func TestDecideISA(t *testing.T) {
	for _, tc := range []struct {
		env       string
		best, max Level
		want      Level
		warn      bool
	}{
		{"", AVX512, AVX512, AVX512, false},
		{"", AVX2, AVX2, AVX2, false},
		{"", Generic, Generic, Generic, false},
		{"avx512", AVX512, AVX512, AVX512, false},
		{"avx2", AVX512, AVX512, AVX2, false},
		{"generic", AVX512, AVX512, Generic, false},
		{" AVX2\n", AVX512, AVX512, AVX2, false},
		{"Generic", AVX2, AVX2, Generic, false},
		{"avx512", AVX2, AVX2, AVX2, false},          // more than the CPU has: the best below
		{"avx512", Generic, Generic, Generic, false}, // a noasm build or an old CPU
		{"avx2", Generic, Generic, Generic, false},
		{"avx512-16x16", AVX512, AVX512, AVX512, true}, // a gemm kernel's name, not a level
		{"avx512-16x16", AVX2, AVX2, AVX2, true},
		{"sse", AVX512, AVX512, AVX512, true},
		{"avx-512", AVX2, AVX2, AVX2, true},
		{"   ", AVX512, AVX512, AVX512, false},
		{"", AVX512, AMX, AVX512, false}, // AMX only when asked
		{"amx", AVX512, AMX, AMX, false},
		{" AMX ", AVX512, AMX, AMX, false},
		{"avx512", AVX512, AMX, AVX512, false},
		{"avx2", AVX512, AMX, AVX2, false},
		{"amx", AVX512, AVX512, AVX512, false}, // no tiles: the best below
		{"amx", AVX2, AVX2, AVX2, false},
		{"amx-bf16", AVX512, AMX, AVX512, true},
		{"", NEON, NEON, NEON, false}, // arm64
		{"neon", NEON, NEON, NEON, false},
		{"generic", NEON, NEON, Generic, false},
		{"avx2", NEON, NEON, NEON, false},        // more than the CPU has: the best below
		{"neon", AVX512, AVX512, Generic, false}, // x86 has no NEON kernels
		{"neon", Generic, Generic, Generic, false},
	} {
		got, warning := decideISA(tc.env, tc.best, tc.max)
		if got != tc.want || (warning != "") != tc.warn {
			t.Errorf("decideISA(%q, %v, %v) = %v, warning %q; want %v, warning %v", tc.env, tc.best, tc.max, got, warning, tc.want, tc.warn)
		}
		if tc.warn {
			for _, s := range []string{"DUEL_ISA", tc.env, "amx, avx512, avx2, neon, generic", tc.best.String()} {
				if !strings.Contains(warning, s) {
					t.Errorf("decideISA(%q): warning %q does not mention %q", tc.env, warning, s)
				}
			}
		}
	}
}

// TestLevelString checks the level names and their order.
func TestLevelString(t *testing.T) {
	for _, tc := range []struct {
		l    Level
		want string
	}{{Generic, "generic"}, {NEON, "neon"}, {AVX2, "avx2"}, {AVX512, "avx512"}, {AMX, "amx"}, {Level(7), "Level(7)"}} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("Level(%d).String() = %q, want %q", int(tc.l), got, tc.want)
		}
	}
	if !(Generic < NEON && NEON < AVX2 && AVX2 < AVX512 && AVX512 < AMX) {
		t.Error("levels out of order")
	}
}

// TestISAHere checks that the process's level is the one decideISA gives
// for its DUEL_ISA on this machine, and that the helpers agree with it.
func TestISAHere(t *testing.T) {
	t.Logf("%s: %s, ISA %s", EnvISA, envISA(), ISA())
	want, _ := decideISA(envISA(), Detect().Best(), Detect().Max())
	if ISA() != want {
		t.Errorf("ISA() = %v, want %v", ISA(), want)
	}
	if AllowAMX() != (ISA() == AMX) || AllowAVX512() != (ISA() >= AVX512) || AllowAVX2() != (ISA() >= AVX2) {
		t.Errorf("AllowAMX %v, AllowAVX512 %v, AllowAVX2 %v with ISA %v", AllowAMX(), AllowAVX512(), AllowAVX2(), ISA())
	}
	if ISA() > Detect().Max() || (ISA() > Detect().Best() && ISA() != AMX) {
		t.Errorf("ISA %v above the best level %v (max %v)", ISA(), Detect().Best(), Detect().Max())
	}
}

//go:build amd64 && !noasm

package memory

import (
	"reflect"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/kernels/gemm"
	"golang.org/x/sys/cpu"
)

// scoreVariants lists the score passes to test and time: the Go loop (a
// nil kernel) and every assembly kernel this CPU can run, whatever
// DUEL_ISA selects for scorePass.
func scoreVariants() []variant[scoreFunc] {
	vs := []variant[scoreFunc]{{"go", nil}}
	if cpu.X86.HasAVX512F {
		vs = append(vs, variant[scoreFunc]{"avx512", scorePassAsm512})
	}
	if cpu.X86.HasAVX2 {
		vs = append(vs, variant[scoreFunc]{"avx2", scorePassAsm2})
	}
	return vs
}

// blendVariants lists the blends to test and time, as scoreVariants.
func blendVariants() []variant[blendFunc] {
	vs := []variant[blendFunc]{{"go", nil}}
	if cpu.X86.HasAVX512F {
		vs = append(vs, variant[blendFunc]{"avx512", blendAsm512})
	}
	if cpu.X86.HasAVX2 {
		vs = append(vs, variant[blendFunc]{"avx2", blendAsm2})
	}
	return vs
}

// transposeVariants lists the transpositions to test and time, as
// scoreVariants.
func transposeVariants() []variant[transposeFunc] {
	vs := []variant[transposeFunc]{{"go", nil}}
	if cpu.X86.HasAVX512F {
		vs = append(vs, variant[transposeFunc]{"avx512", transposeTilesAsm512},
			variant[transposeFunc]{"avx512-cached", transposeTilesCached512})
	}
	if cpu.X86.HasAVX2 {
		vs = append(vs, variant[transposeFunc]{"avx2", transposeTilesAsm2},
			variant[transposeFunc]{"avx2-cached", transposeTilesCached2})
	}
	return vs
}

// TestKernelDispatch checks which kernels the package selects: the
// AVX-512 ones under DUEL_ISA=avx512 (the default) where the CPU has
// AVX-512, else the AVX2 ones under DUEL_ISA=avx512 or avx2 where it has
// AVX2 (and FMA), else the Go loops (DUEL_ISA=generic).
func TestKernelDispatch(t *testing.T) {
	isa := gemm.ISA()
	want := func(avx512, avx2 bool) string {
		switch {
		case isa == "avx512" && avx512:
			return "avx512"
		case (isa == "avx512" || isa == "avx2") && avx2:
			return "avx2"
		}
		return "go"
	}
	x := cpu.X86
	for _, tt := range []struct{ kernel, got, want string }{
		{"score pass", selected(scoreKernel, scoreVariants()), want(x.HasAVX512F, x.HasAVX2)},
		{"blend", selected(blendKernel, blendVariants()), want(x.HasAVX512F, x.HasAVX2)},
		{"transposition", selected(transposeKernel, transposeVariants()), want(x.HasAVX512F, x.HasAVX2)},
		{"cached transposition", strings.TrimSuffix(selected(transposeCachedKernel, transposeVariants()), "-cached"), want(x.HasAVX512F, x.HasAVX2)},
	} {
		if tt.got != tt.want {
			t.Errorf("DUEL_ISA %s: %s %s, want %s", isa, tt.kernel, tt.got, tt.want)
		}
	}
	if prefetchOK != (blendKernel != nil) {
		t.Errorf("prefetch %v with blend %s", prefetchOK, selected(blendKernel, blendVariants()))
	}
}

// selected returns the name of the variant of vs that kern is ("go" for
// nil), or "unlisted".
func selected[F any](kern F, vs []variant[F]) string {
	p := reflect.ValueOf(kern).Pointer()
	for _, v := range vs {
		if reflect.ValueOf(v.kern).Pointer() == p {
			return v.name
		}
	}
	return "unlisted"
}

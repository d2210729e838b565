package gemm

import (
	"testing"

	"github.com/duel-ssl/duel/internal/gentest"
)

// TestGeneratedKernels holds the committed assembly to gen_kernels.go's
// output (its VDPBF16PS are raw bytes: a hand edit would otherwise go
// unnoticed).
func TestGeneratedKernels(t *testing.T) { gentest.Check(t, "gen_kernels.go") }

// TestGeneratedNEON holds kernel_neon_arm64.s to gen_neon.go's output (its
// FMLA by element are raw words).
func TestGeneratedNEON(t *testing.T) { gentest.Check(t, "gen_neon.go") }

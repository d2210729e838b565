package gemm

import (
	"testing"

	"github.com/duel-ssl/duel/internal/gentest"
)

// TestGeneratedKernels holds the committed assembly to gen_kernels.go's
// output (its VDPBF16PS are raw bytes: a hand edit would otherwise go
// unnoticed).
func TestGeneratedKernels(t *testing.T) { gentest.Check(t, "gen_kernels.go") }

//go:build !amd64 || noasm

package memory

import "testing"

// scoreVariants lists the score passes to test and time: the Go loop only
// in a pure-Go build.
func scoreVariants() []variant[scoreFunc] { return []variant[scoreFunc]{{"go", nil}} }

// blendVariants lists the blends to test and time: the Go loop only.
func blendVariants() []variant[blendFunc] { return []variant[blendFunc]{{"go", nil}} }

// transposeVariants lists the transpositions to test and time: the Go
// loop only.
func transposeVariants() []variant[transposeFunc] {
	return []variant[transposeFunc]{{"go", nil}}
}

// TestKernelDispatch checks that a pure-Go build selects no assembly
// kernel.
func TestKernelDispatch(t *testing.T) {
	if scoreKernel != nil || blendKernel != nil || transposeKernel != nil || transposeCachedKernel != nil {
		t.Fatal("an assembly kernel is selected in a pure-Go build")
	}
}

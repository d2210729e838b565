//go:build (!amd64 && !arm64) || noasm

package gemm

// detect lists the kernels of a pure-Go build: only the generic one,
// without its blocking (see withDerived).
func detect() []*kernel { return []*kernel{genericKernel} }

// interleaveAsm reports that a pure-Go build has no assembly interleave.
func interleaveAsm(dst, src []float32, w, ld, kc int) bool { return false }

// copyPanelAsm reports that a pure-Go build has no assembly panel copy.
func copyPanelAsm(dst, src []float32, w, ld, kc int) bool { return false }

// packRowsAsm reports that a pure-Go build has no assembly packRows.
func packRowsAsm(dst, src []float32, w, ld, kc, panels int) bool { return false }

// A pure-Go build has no assembly Saxpy and Sdot.
const hasVecBLAS1 = false

func saxpyAsm(alpha float32, x, y []float32) int { return 0 }

func sdotAsm(x, y []float32) (float32, int) { return 0, 0 }

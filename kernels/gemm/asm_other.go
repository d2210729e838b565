//go:build !amd64 || noasm

package gemm

// Without amd64 assembly (arm64 has its own SGEMM kernel, nothing else),
// the packing and BLAS-1 routines run their Go code.

// interleaveAsm reports that this build has no assembly interleave.
func interleaveAsm(dst, src []float32, w, ld, kc int) bool { return false }

// copyPanelAsm reports that this build has no assembly panel copy.
func copyPanelAsm(dst, src []float32, w, ld, kc int) bool { return false }

// packRowsAsm reports that this build has no assembly packRows.
func packRowsAsm(dst, src []float32, w, ld, kc, panels int) bool { return false }

// This build has no assembly Saxpy and Sdot.
const hasVecBLAS1 = false

func saxpyAsm(alpha float32, x, y []float32) int { return 0 }

func sdotAsm(x, y []float32) (float32, int) { return 0, 0 }

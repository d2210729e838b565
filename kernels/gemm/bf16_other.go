//go:build !amd64 || noasm

package gemm

// detectBF16 lists no bfloat16 kernel: SgemmBF16 runs on Sgemm.
func detectBF16() []*kernel { return nil }

// cvtBF16 converts nothing: the Go loop does it all.
func cvtBF16(dst, row []float32) int { return 0 }

// pairRowsBF16 converts nothing: the Go loop does it all.
func pairRowsBF16(out, r0, r1 []float32) int { return 0 }

// cvtBF16Bits converts nothing: the Go loop does it all.
func cvtBF16Bits(dst []uint16, src []float32) int { return 0 }

// pairRunsAsm does nothing: PairRuns' Go loop does it all.
func pairRunsAsm(dst []float32, dstStep int, r0, r1 []float32, step, count, n int, reverse bool) bool {
	return false
}

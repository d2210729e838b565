//go:build !amd64 || noasm

package conv

// gatherFast reports whether an assembly gatherRows runs: never in this
// build.
func gatherFast() bool { return false }

// gatherRowsAsm reports false: gatherRows runs in Go.
func gatherRowsAsm(dst, x []float32, start, cs int, tabs []patchTap, t0, rows int) bool {
	return false
}

// transposeGatherAsm reports false: transposeGather runs in Go.
func transposeGatherAsm(dst []float32, rows *[patchPanel]*float32, masks *[patchPanel]*uint32, n int) bool {
	return false
}

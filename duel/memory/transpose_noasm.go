//go:build !amd64 || noasm

package memory

// A pure-Go build has no assembly transposition.
const transposeAsm = false

// transposeTilesAsm is never called in a pure-Go build.
func transposeTilesAsm(colT, dots []int32, n, b, w int) {
	panic("memory: no assembly transposition")
}

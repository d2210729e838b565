//go:build !amd64 || noasm

package conv

// Fast reports whether the assembly kernels run: never in this build.
func Fast() bool { return false }

// FastBF16 reports whether the bfloat16 assembly kernels run: never in
// this build.
func FastBF16() bool { return false }

// forwardKernel returns the micro-kernel of tile t (with bf16, over words
// of bfloat16 pairs).
func forwardKernel(t tile, bf16 bool) fwdFunc { return fwdGo(t, bf16) }

// wgradKernel returns the weight-gradient micro-kernels for mr rows at
// stride 1 and 2 (with bf16, over words of bfloat16 pairs).
func wgradKernel(mr int, bf16 bool) (wgradFunc, wgradS2Func) {
	return wgradGo(mr, bf16), wgradS2Go(mr, bf16)
}

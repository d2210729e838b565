//go:build !amd64 || noasm

package conv

// Fast reports whether the assembly kernels run: never in this build.
func Fast() bool { return false }

// forwardKernel returns the micro-kernel of tile t.
func forwardKernel(t tile) fwdFunc { return fwdGo(t) }

// wgradKernel returns the weight-gradient micro-kernels for mr rows at
// stride 1 and 2.
func wgradKernel(mr int) (wgradFunc, wgradS2Func) { return wgradGo(mr), wgradS2Go(mr) }

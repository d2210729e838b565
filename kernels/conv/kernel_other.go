//go:build !amd64 || noasm

package conv

// Fast reports whether the assembly kernels run: never in this build.
func Fast() bool { return false }

// forwardKernel returns the micro-kernel of tile t.
func forwardKernel(t tile) fwdFunc { return fwdGo(t) }

// wgradKernel returns the weight-gradient micro-kernel for mr rows.
func wgradKernel(mr int) wgradFunc { return wgradGo(mr) }

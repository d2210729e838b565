//go:build arm64 && !noasm

package cpu

// asimd: every ARMv8-A core has Advanced SIMD, and this build has the
// kernels that use it.
const asimd = true

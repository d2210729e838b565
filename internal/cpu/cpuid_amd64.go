//go:build amd64 && !noasm

package cpu

import "runtime"

// cpuid executes CPUID with EAX = leaf and ECX = sub (cpuid_amd64.s).
//
//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// xgetbv0 returns XCR0 (XGETBV with ECX = 0) as its low and high halves
// (cpuid_amd64.s). Only valid when CPUID reports OSXSAVE.
//
//go:noescape
func xgetbv0() (eax, edx uint32)

// detect reads this processor. macOS enables the AVX-512 state on first
// use, so XCR0 does not show it there.
func detect() Info {
	return decode(cpuid, func() uint64 {
		lo, hi := xgetbv0()
		return uint64(hi)<<32 | uint64(lo)
	}, runtime.GOOS == "darwin")
}

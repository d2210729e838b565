//go:build !amd64 || noasm

package cpu

import "os"

// sysfsCacheDir is where Linux describes cpu0's caches, and sysfsMIDR
// where Linux on arm64 gives cpu0's Main ID Register.
const (
	sysfsCacheDir = "/sys/devices/system/cpu/cpu0/cache"
	sysfsMIDR     = "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1"
)

// detect describes a processor without CPUID (another architecture, or a
// noasm build): Advanced SIMD on arm64 (asimd), the core's identity from
// its MIDR on arm64 Linux, the cache sizes Linux gives in sysfs, and what
// the operating system adds (osDescribe: macOS's sysctl); zero where
// nothing says, and the kernels' defaults then.
func detect() Info {
	var i Info
	i.ASIMD, i.Reported.ASIMD = asimd, asimd
	if b, err := os.ReadFile(sysfsMIDR); err == nil {
		applyMIDR(&i, string(b))
	}
	i.L1D, i.L2, i.L3 = sysfsCaches(os.DirFS(sysfsCacheDir))
	osDescribe(&i)
	return i
}

//go:build (!amd64 || noasm) && darwin

package cpu

import "golang.org/x/sys/unix"

// osDescribe fills, on macOS, what sysctl tells of the processor: the
// brand ("Apple M2 Pro") and, for the performance cores where the machine
// has several kinds (hw.perflevel0), the level-1 data cache and the
// level-2 cache's share per core (Apple's L2 is shared by a cluster:
// hw.perflevel0.cpusperl2). A name sysctl does not know is left as it is.
func osDescribe(i *Info) {
	if s, err := unix.Sysctl("machdep.cpu.brand_string"); err == nil && s != "" {
		i.Brand = s
		if i.Vendor == "" {
			i.Vendor = "Apple"
		}
	}
	size := func(names ...string) int {
		for _, n := range names {
			if v, err := unix.SysctlUint64(n); err == nil && v > 0 && v <= maxCacheSize {
				return int(v)
			}
		}
		return 0
	}
	if l1 := size("hw.perflevel0.l1dcachesize", "hw.l1dcachesize"); l1 > 0 {
		i.L1D = l1
	}
	l2 := size("hw.perflevel0.l2cachesize", "hw.l2cachesize")
	if share, err := unix.SysctlUint32("hw.perflevel0.cpusperl2"); err == nil && share > 1 && l2 > 0 {
		l2 /= int(share)
	}
	if l2 > 0 {
		i.L2 = l2
	}
	if l3 := size("hw.l3cachesize"); l3 > 0 {
		i.L3 = l3
	}
}

package cpu

// caches returns the sizes in bytes of the level-1 data, level-2 and
// level-3 caches. AMD (and Hygon) processors describe them in leaf
// 0x8000001D when they have the topology extensions, older ones in leaves
// 0x80000005 and 0x80000006; Intel (and the rest) in leaf 4, with leaf
// 0x80000006 as a fallback for the L2.
func caches(cpuid cpuidFunc, vendor string, maxLeaf, maxExt uint32) (l1d, l2, l3 int) {
	amd := vendor == "AuthenticAMD" || vendor == "HygonGenuine"
	if amd {
		if maxExt >= 0x8000001D {
			if _, _, ecx, _ := cpuid(0x80000001, 0); bit(ecx, 22) {
				l1d, l2, l3 = cacheLeaf(cpuid, 0x8000001D)
			}
		}
	} else if maxLeaf >= 4 {
		l1d, l2, l3 = cacheLeaf(cpuid, 4)
	}
	if l1d == 0 && amd && maxExt >= 0x80000005 {
		_, _, ecx, _ := cpuid(0x80000005, 0)
		l1d = int(ecx>>24) << 10
	}
	if maxExt >= 0x80000006 {
		_, _, ecx, edx := cpuid(0x80000006, 0)
		if l2 == 0 {
			l2 = int(ecx>>16) << 10
		}
		if l3 == 0 && amd {
			l3 = int(edx>>18) << 19
		}
	}
	return l1d, l2, l3
}

// cacheLeaf walks the deterministic cache parameters of leaf (4 on Intel,
// 0x8000001D on AMD: one sub-leaf per cache until a null type) and returns
// the level-1 data, level-2 and level-3 sizes. A size is ways x partitions
// x line size x sets.
func cacheLeaf(cpuid cpuidFunc, leaf uint32) (l1d, l2, l3 int) {
	for sub := range uint32(16) {
		eax, ebx, ecx, _ := cpuid(leaf, sub)
		typ := eax & 0x1f // 1 data, 2 instruction, 3 unified
		if typ == 0 {
			break
		}
		if typ == 2 {
			continue
		}
		ways := int(ebx>>22&0x3ff) + 1
		parts := int(ebx>>12&0x3ff) + 1
		line := int(ebx&0xfff) + 1
		sets := int(ecx) + 1
		size := ways * parts * line * sets
		switch eax >> 5 & 7 {
		case 1:
			l1d = size
		case 2:
			l2 = size
		case 3:
			l3 = size
		}
	}
	return l1d, l2, l3
}

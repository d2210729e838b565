package cpu

import (
	"encoding/binary"
	"strings"
)

// cpuidFunc executes CPUID with EAX = leaf and ECX = sub and returns the
// four result registers. decode takes it as a parameter so that tests can
// replay the registers of processors they do not run on.
type cpuidFunc func(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// XCR0 state components (Intel SDM vol. 1, 13.1).
const (
	xcr0YMM = 1<<1 | 1<<2        // SSE and AVX (upper YMM halves)
	xcr0ZMM = 1<<5 | 1<<6 | 1<<7 // opmask, upper ZMM0-15, ZMM16-31
	xcr0AMX = 1<<17 | 1<<18      // XTILECFG, XTILEDATA
)

// decode builds an Info from cpuid and, when the CPU reports OSXSAVE, the
// XCR0 register read by xgetbv. lazyZMM says that the operating system
// enables the ZMM state on first use (macOS) rather than in XCR0, so
// AVX-512 is usable wherever AVX is.
func decode(cpuid cpuidFunc, xgetbv func() uint64, lazyZMM bool) Info {
	var info Info
	maxLeaf, b, c, d := cpuid(0, 0)
	var vendor [12]byte
	binary.LittleEndian.PutUint32(vendor[0:], b)
	binary.LittleEndian.PutUint32(vendor[4:], d)
	binary.LittleEndian.PutUint32(vendor[8:], c)
	info.Vendor = strings.TrimRight(string(vendor[:]), "\x00")
	if maxLeaf < 1 {
		return info
	}

	sig, _, ecx1, _ := cpuid(1, 0)
	info.Family, info.Model, info.Stepping = signature(sig)
	r := &info.Reported
	r.FMA = bit(ecx1, 12)
	osxsave, avx := bit(ecx1, 27), bit(ecx1, 28)
	if maxLeaf >= 7 {
		eax7, ebx7, ecx7, edx7 := cpuid(7, 0)
		r.AVX2 = bit(ebx7, 5)
		r.AVX512F = bit(ebx7, 16)
		r.AVX512DQ = bit(ebx7, 17)
		r.AVX512BW = bit(ebx7, 30)
		r.AVX512VL = bit(ebx7, 31)
		r.AVX512VNNI = bit(ecx7, 11)
		r.AMXBF16 = bit(edx7, 22)
		r.AMXTile = bit(edx7, 24)
		r.AMXInt8 = bit(edx7, 25)
		if eax7 >= 1 {
			eax71, _, _, _ := cpuid(7, 1)
			r.AVXVNNI = bit(eax71, 4)
			r.AVX512BF16 = bit(eax71, 5)
		}
	}

	if osxsave {
		xcr0 := xgetbv()
		info.OSYMM = avx && xcr0&xcr0YMM == xcr0YMM
		info.OSZMM = info.OSYMM && (lazyZMM || xcr0&xcr0ZMM == xcr0ZMM)
		info.OSAMX = xcr0&xcr0AMX == xcr0AMX
	}
	info.Features = usable(*r, info.OSYMM, info.OSZMM, info.OSAMX)

	maxExt, _, _, _ := cpuid(0x80000000, 0)
	if maxExt >= 0x80000004 {
		info.Brand = brand(cpuid)
	}
	info.L1D, info.L2, info.L3 = caches(cpuid, info.Vendor, maxLeaf, maxExt)
	info.Microarch = microarch(info.Vendor, info.Family, info.Model)
	info.FMA512Units = fma512Units(info.Microarch, info.Model, info.Brand)
	return info
}

// signature splits the processor signature (leaf 1 EAX) into the display
// family, model and stepping: the extended family is added when the base
// family is 15, the extended model prefixed when it is 6 or 15.
func signature(eax uint32) (family, model, stepping int) {
	stepping = int(eax & 0xf)
	model = int(eax >> 4 & 0xf)
	family = int(eax >> 8 & 0xf)
	if family == 0xf {
		family += int(eax >> 20 & 0xff)
	}
	if family == 0x6 || family >= 0xf {
		model |= int(eax>>16&0xf) << 4
	}
	return family, model, stepping
}

// usable keeps the features of r whose register state the operating
// system saves: the 256-bit ones need the YMM state, AVX-512 also the ZMM
// state, AMX the tile state.
func usable(r Features, ymm, zmm, amx bool) Features {
	zmm = zmm && ymm
	return Features{
		AVX2:       r.AVX2 && ymm,
		FMA:        r.FMA && ymm,
		AVXVNNI:    r.AVXVNNI && ymm,
		AVX512F:    r.AVX512F && zmm,
		AVX512DQ:   r.AVX512DQ && zmm,
		AVX512BW:   r.AVX512BW && zmm,
		AVX512VL:   r.AVX512VL && zmm,
		AVX512VNNI: r.AVX512VNNI && zmm,
		AVX512BF16: r.AVX512BF16 && zmm,
		AMXTile:    r.AMXTile && amx,
		AMXBF16:    r.AMXBF16 && amx,
		AMXInt8:    r.AMXInt8 && amx,
	}
}

// brand returns the brand string of leaves 0x80000002-0x80000004 without
// its NULs and surrounding blanks.
func brand(cpuid cpuidFunc) string {
	var buf [48]byte
	for i := range uint32(3) {
		a, b, c, d := cpuid(0x80000002+i, 0)
		for j, v := range [4]uint32{a, b, c, d} {
			binary.LittleEndian.PutUint32(buf[16*i+4*uint32(j):], v)
		}
	}
	s := string(buf[:])
	if k := strings.IndexByte(s, 0); k >= 0 {
		s = s[:k]
	}
	return strings.Join(strings.Fields(s), " ")
}

// bit reports whether bit n of x is set.
func bit(x uint32, n uint) bool { return x>>n&1 == 1 }

package cpu

import (
	"encoding/binary"
	"testing"
)

// fakeCPU replays CPUID registers by (leaf, sub-leaf); absent leaves read
// as zeros, as out-of-range leaves do on AMD.
type fakeCPU map[[2]uint32][4]uint32

func (f fakeCPU) cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32) {
	r := f[[2]uint32{leaf, sub}]
	return r[0], r[1], r[2], r[3]
}

// set stores the registers of (leaf, sub).
func (f fakeCPU) set(leaf, sub uint32, eax, ebx, ecx, edx uint32) {
	f[[2]uint32{leaf, sub}] = [4]uint32{eax, ebx, ecx, edx}
}

// newFake returns a processor with the vendor, the signature of family,
// model and stepping, the highest leaves maxLeaf and maxExt, and the
// brand string.
func newFake(vendor string, family, model, stepping int, maxLeaf, maxExt uint32, brand string) fakeCPU {
	f := fakeCPU{}
	v := []byte(vendor)
	f.set(0, 0, maxLeaf, binary.LittleEndian.Uint32(v[0:]), binary.LittleEndian.Uint32(v[8:]), binary.LittleEndian.Uint32(v[4:]))
	base, ext := family, 0
	if family > 0xf {
		base, ext = 0xf, family-0xf
	}
	sig := uint32(stepping) | uint32(model&0xf)<<4 | uint32(base)<<8 | uint32(model>>4)<<16 | uint32(ext)<<20
	f.set(1, 0, sig, 0, 0, 0)
	f.set(0x80000000, 0, maxExt, 0, 0, 0)
	var b [48]byte
	copy(b[:], brand)
	for i := range uint32(3) {
		r := b[16*i:]
		f.set(0x80000002+i, 0, binary.LittleEndian.Uint32(r), binary.LittleEndian.Uint32(r[4:]), binary.LittleEndian.Uint32(r[8:]), binary.LittleEndian.Uint32(r[12:]))
	}
	return f
}

// or sets bits in one register of (leaf, sub): reg 0..3 is EAX..EDX.
func (f fakeCPU) or(leaf, sub uint32, reg int, bits ...uint) {
	r := f[[2]uint32{leaf, sub}]
	for _, b := range bits {
		r[reg] |= 1 << b
	}
	f[[2]uint32{leaf, sub}] = r
}

// cacheRegs sets sub-leaf sub of a deterministic cache leaf (4 or
// 0x8000001D) to a cache of the given level and type (1 data, 2
// instruction, 3 unified), ways x 64-byte lines x sets.
func (f fakeCPU) cache(leaf, sub uint32, level, typ, ways, sets uint32) {
	f.set(leaf, sub, typ|level<<5, (ways-1)<<22|63, sets-1, 0)
}

// Register bits used below.
const (
	eax, ebx, ecx, edx = 0, 1, 2, 3
)

// zen4 is an EPYC 9R14 (Genoa) with the topology extensions.
func zen4() fakeCPU {
	f := newFake("AuthenticAMD", 25, 0x11, 1, 0x10, 0x80000028, "AMD EPYC 9R14 96-Core Processor                ")
	f.or(1, 0, ecx, 12, 27, 28)        // FMA, OSXSAVE, AVX
	f.or(7, 0, ebx, 5, 16, 17, 30, 31) // AVX2, AVX-512 F, DQ, BW, VL
	f.or(7, 0, ecx, 11)                // AVX-512 VNNI
	f.set(7, 0, 1, f[[2]uint32{7, 0}][1], f[[2]uint32{7, 0}][2], 0)
	f.or(7, 1, eax, 5)                            // AVX-512 BF16
	f.or(0x80000001, 0, ecx, 22)                  // topology extensions
	f.cache(0x8000001D, 0, 1, 1, 8, 64)           // 32 KiB L1d
	f.cache(0x8000001D, 1, 1, 2, 8, 64)           // 32 KiB L1i
	f.cache(0x8000001D, 2, 2, 3, 8, 2048)         // 1 MiB L2
	f.cache(0x8000001D, 3, 3, 3, 16, 32768)       // 32 MiB L3
	f.set(0x80000005, 0, 0, 0, 0x20<<24, 0)       // legacy: 32 KiB L1d
	f.set(0x80000006, 0, 0, 0, 0x400<<16, 64<<18) // legacy: 1 MiB L2, 32 MiB L3
	return f
}

// spr is a Xeon Platinum 8480+ (Sapphire Rapids) with AMX.
func spr() fakeCPU {
	f := newFake("GenuineIntel", 6, 0x8f, 8, 0x20, 0x80000008, "Intel(R) Xeon(R) Platinum 8480+")
	f.or(1, 0, ecx, 12, 27, 28)
	f.or(7, 0, ebx, 5, 16, 17, 30, 31)
	f.or(7, 0, ecx, 11)
	f.or(7, 0, edx, 22, 24, 25)     // AMX BF16, TILE, INT8
	f.or(7, 0, eax, 0)              // sub-leaf 1 present
	f.or(7, 1, eax, 4, 5)           // AVX-VNNI, AVX-512 BF16
	f.cache(4, 0, 1, 1, 12, 64)     // 48 KiB L1d
	f.cache(4, 1, 1, 2, 8, 64)      // 32 KiB L1i
	f.cache(4, 2, 2, 3, 16, 2048)   // 2 MiB L2
	f.cache(4, 3, 3, 3, 15, 114688) // 105 MiB L3
	return f
}

// TestDecode decodes recorded-like register sets of several processors.
func TestDecode(t *testing.T) {
	all := Features{AVX2: true, FMA: true, AVX512F: true, AVX512DQ: true, AVX512BW: true, AVX512VL: true, AVX512VNNI: true, AVX512BF16: true}
	sprAll := all
	sprAll.AVXVNNI, sprAll.AMXTile, sprAll.AMXBF16, sprAll.AMXInt8 = true, true, true, true
	sprNoAMX := sprAll
	sprNoAMX.AMXTile, sprNoAMX.AMXBF16, sprNoAMX.AMXInt8 = false, false, false
	ymmOnly := Features{AVX2: true, FMA: true, AVXVNNI: true}

	legacyAMD := zen4()
	legacyAMD[[2]uint32{0x80000001, 0}] = [4]uint32{}
	noXSAVE := zen4()
	noXSAVE[[2]uint32{1, 0}] = [4]uint32{noXSAVE[[2]uint32{1, 0}][0], 0, 1 << 12, 0}
	old := newFake("GenuineIntel", 15, 2, 9, 0, 0, "")

	for _, tc := range []struct {
		name     string
		f        fakeCPU
		xcr0     uint64
		want     Info
		best     Level
		reported Features
		osYMM    bool
	}{
		{"zen4", zen4(), 0xe7, Info{Vendor: "AuthenticAMD", Family: 25, Model: 0x11, Stepping: 1,
			Brand: "AMD EPYC 9R14 96-Core Processor", Microarch: "zen4", L1D: 32 << 10, L2: 1 << 20, L3: 32 << 20,
			FMA512Units: 1, Features: all, Reported: all, OSYMM: true, OSZMM: true}, AVX512, all, true},
		{"zen4 legacy cache leaves", legacyAMD, 0xe7, Info{Vendor: "AuthenticAMD", Family: 25, Model: 0x11, Stepping: 1,
			Brand: "AMD EPYC 9R14 96-Core Processor", Microarch: "zen4", L1D: 32 << 10, L2: 1 << 20, L3: 32 << 20,
			FMA512Units: 1, Features: all, Reported: all, OSYMM: true, OSZMM: true}, AVX512, all, true},
		{"zen4 without OSXSAVE", noXSAVE, 0xe7, Info{Vendor: "AuthenticAMD", Family: 25, Model: 0x11, Stepping: 1,
			Brand: "AMD EPYC 9R14 96-Core Processor", Microarch: "zen4", L1D: 32 << 10, L2: 1 << 20, L3: 32 << 20,
			FMA512Units: 1, Reported: all}, Generic, all, false},
		{"sapphire rapids", spr(), 0x600e7, Info{Vendor: "GenuineIntel", Family: 6, Model: 0x8f, Stepping: 8,
			Brand: "Intel(R) Xeon(R) Platinum 8480+", Microarch: "sapphirerapids", L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20,
			FMA512Units: 2, Features: sprAll, Reported: sprAll, OSYMM: true, OSZMM: true, OSAMX: true}, AVX512, sprAll, true},
		{"sapphire rapids, OS without AMX", spr(), 0xe7, Info{Vendor: "GenuineIntel", Family: 6, Model: 0x8f, Stepping: 8,
			Brand: "Intel(R) Xeon(R) Platinum 8480+", Microarch: "sapphirerapids", L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20,
			FMA512Units: 2, Features: sprNoAMX, Reported: sprAll, OSYMM: true, OSZMM: true}, AVX512, sprAll, true},
		{"sapphire rapids, OS without ZMM", spr(), 0x7, Info{Vendor: "GenuineIntel", Family: 6, Model: 0x8f, Stepping: 8,
			Brand: "Intel(R) Xeon(R) Platinum 8480+", Microarch: "sapphirerapids", L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20,
			FMA512Units: 2, Features: ymmOnly, Reported: sprAll, OSYMM: true}, AVX2, sprAll, true},
		{"leaf 0 only", old, 0, Info{Vendor: "GenuineIntel"}, Generic, Features{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decode(tc.f.cpuid, func() uint64 { return tc.xcr0 }, false)
			if got != tc.want {
				t.Errorf("decode:\n got %+v\nwant %+v", got, tc.want)
			}
			if b := got.Best(); b != tc.best {
				t.Errorf("Best() = %v, want %v", b, tc.best)
			}
			wantMax := tc.best
			if tc.name == "sapphire rapids" {
				wantMax = AMX // the only one with usable tiles
			}
			if m := got.Max(); m != wantMax {
				t.Errorf("Max() = %v, want %v", m, wantMax)
			}
		})
	}
}

// TestDecodeLazyZMM checks that a lazily enabled ZMM state (macOS) makes
// AVX-512 usable although XCR0 does not show it.
func TestDecodeLazyZMM(t *testing.T) {
	got := decode(spr().cpuid, func() uint64 { return 0x7 }, true)
	if !got.OSZMM || !got.AVX512F || got.Best() != AVX512 {
		t.Errorf("lazy ZMM: OSZMM %v, AVX512F %v, Best %v", got.OSZMM, got.AVX512F, got.Best())
	}
}

// TestSignature checks the display family, model and stepping.
func TestSignature(t *testing.T) {
	for _, tc := range []struct {
		eax                     uint32
		family, model, stepping int
	}{
		{0x00b00f21, 26, 0x02, 1}, // Zen 5 EPYC (Turin)
		{0x00a10f11, 25, 0x11, 1}, // Zen 4 EPYC (Genoa)
		{0x000806f8, 6, 0x8f, 8},  // Sapphire Rapids
		{0x00050657, 6, 0x55, 7},  // Cascade Lake
		{0x00000f29, 15, 0x02, 9}, // Pentium 4: family 15, no extended model
		{0x00000633, 6, 0x03, 3},  // Pentium II
		{0x00000543, 5, 0x04, 3},  // family 5: the extended model is not used
	} {
		f, m, s := signature(tc.eax)
		if f != tc.family || m != tc.model || s != tc.stepping {
			t.Errorf("signature(%#x) = %d, %#x, %d; want %d, %#x, %d", tc.eax, f, m, s, tc.family, tc.model, tc.stepping)
		}
	}
}

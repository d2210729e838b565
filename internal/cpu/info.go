package cpu

import (
	"strconv"
	"strings"
	"sync"
)

// Features are the vector extensions duel's kernels may use, as CPUID
// reports them (Info.Reported) or as usable (Info's embedded Features:
// reported and enabled by the operating system).
type Features struct {
	AVX2       bool `json:"avx2"`
	FMA        bool `json:"fma"`
	AVX512F    bool `json:"avx512f"`
	AVX512DQ   bool `json:"avx512dq"`
	AVX512BW   bool `json:"avx512bw"`
	AVX512VL   bool `json:"avx512vl"`
	AVX512VNNI bool `json:"avx512vnni"`
	AVX512BF16 bool `json:"avx512bf16"`
	AVXVNNI    bool `json:"avxvnni"`
	AMXTile    bool `json:"amx_tile"`
	AMXBF16    bool `json:"amx_bf16"`
	AMXInt8    bool `json:"amx_int8"`
	// ASIMD is arm64's Advanced SIMD (NEON), part of every ARMv8-A core:
	// true in an arm64 build with assembly.
	ASIMD bool `json:"asimd"`
}

// Info describes the processor. Numeric fields are 0 and strings empty
// where the CPU does not say (or in a build without CPUID: see the package
// documentation).
type Info struct {
	Vendor    string `json:"vendor"`    // CPUID vendor, e.g. "AuthenticAMD", "GenuineIntel"
	Family    int    `json:"family"`    // display family: base + extended family
	Model     int    `json:"model"`     // display model: extended model << 4 | base model
	Stepping  int    `json:"stepping"`  // stepping
	Brand     string `json:"brand"`     // brand string, e.g. "AMD EPYC 9R14 96-Core Processor"
	Microarch string `json:"microarch"` // e.g. "zen4", "sapphirerapids"; "" when the family and model are not in the table

	L1D int `json:"l1d_bytes"` // level-1 data cache per core, bytes
	L2  int `json:"l2_bytes"`  // level-2 cache per core, bytes
	// L3 is the level-3 cache in bytes, shared by several cores: one
	// instance (a CCX on AMD) as the cache leaves report it; the older AMD
	// leaf 0x80000006, used when those are missing (in some virtual
	// machines), may give a whole socket.
	L3 int `json:"l3_bytes"`

	// FMA512Units is the number of 512-bit FMA operations a core starts per
	// cycle, 0 when unknown. It is inferred, not measured: from the
	// microarchitecture (zen4: 1, double-pumped 256-bit units; Ice Lake
	// server and later Xeons: 2; client Ice/Tiger Lake: 1), from the model
	// range on Zen 5 (server and desktop parts: 2, mobile parts: 1) and from
	// the brand string on Skylake-SP and Cascade Lake (Platinum and Gold 6xxx:
	// 2; Gold 5xxx, Silver, Bronze: 1).
	FMA512Units int `json:"fma512_units"`

	// Features are the extensions that can be used: reported by CPUID and
	// with their register state saved by the operating system.
	Features
	// Reported are the extensions as CPUID reports them, whether or not the
	// operating system enables them.
	Reported Features `json:"reported"`

	OSYMM bool `json:"os_ymm"` // XCR0 enables the SSE and AVX state
	OSZMM bool `json:"os_zmm"` // XCR0 also enables the AVX-512 opmask and ZMM state
	// OSAMX: XCR0 enables the AMX tile state. Linux also wants a process
	// to ask for it (arch_prctl ARCH_REQ_XCOMP_PERM) before it uses AMX.
	OSAMX bool `json:"os_amx"`
}

// Detect returns the processor's description, read on the first call and
// shared afterwards: callers must not modify it.
func Detect() *Info { return detected() }

// detected reads the processor once.
var detected = sync.OnceValue(func() *Info {
	info := detect()
	return &info
})

// Best returns the highest level the kernels can run at on this processor:
// AVX512 with AVX-512 F and VL on top of AVX2 (the 512-bit SGEMM kernels
// need VL), AVX2 with AVX2 and FMA, NEON on arm64 (ASIMD), else Generic.
func (i *Info) Best() Level {
	switch {
	case i.AVX2 && i.FMA && i.AVX512F && i.AVX512VL:
		return AVX512
	case i.AVX2 && i.FMA:
		return AVX2
	case i.ASIMD:
		return NEON
	}
	return Generic
}

// Max returns the highest level the kernels can run at on this processor
// when asked: AMX when Best is AVX512 and the processor has AMX-TILE and
// AMX-BF16 with the operating system saving the tile state (and
// AVX512_BF16 for the conversions around the tiles), else Best. AMX is
// not Best: its kernels have not yet been run on such a processor by this
// project, so DUEL_ISA=amx must ask for them.
func (i *Info) Max() Level {
	if b := i.Best(); b != AVX512 || !i.AMXTile || !i.AMXBF16 || !i.AVX512BF16 || !i.AVX512BW {
		return b
	}
	return AMX
}

// Key names the processor for keying tuning files:
// vendor-family-model-stepping-brand, e.g.
// "AuthenticAMD-25-17-1-AMD_EPYC_9R14_96-Core_Processor", with every
// character outside [A-Za-z0-9.-] replaced by '_' (runs collapsed), so it
// can be used as a file name. A processor that says nothing is "unknown-0-0-0".
func (i *Info) Key() string {
	vendor := i.Vendor
	if vendor == "" {
		vendor = "unknown"
	}
	parts := []string{vendor, strconv.Itoa(i.Family), strconv.Itoa(i.Model), strconv.Itoa(i.Stepping)}
	if i.Brand != "" {
		parts = append(parts, i.Brand)
	}
	return sanitize(strings.Join(parts, "-"))
}

// sanitize replaces every character outside [A-Za-z0-9.-] of s by '_',
// collapses runs of '_' and trims them at both ends.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-'
		if !ok {
			under = true
			continue
		}
		if under && b.Len() > 0 {
			b.WriteByte('_')
		}
		under = false
		b.WriteRune(r)
	}
	return b.String()
}

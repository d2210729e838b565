package cpu

import "strings"

// microarch names the microarchitecture of an AMD or Intel processor from
// its vendor, display family and display model, or returns "" when the
// triple is not in the table. AMD's model ranges are Linux's
// (arch/x86/kernel/cpu/amd.c); Intel's models are those of
// arch/x86/include/asm/intel-family.h.
func microarch(vendor string, family, model int) string {
	in := func(lo, hi int) bool { return model >= lo && model <= hi }
	switch vendor {
	case "AuthenticAMD":
		switch family {
		case 0x17:
			switch {
			case in(0x00, 0x2f), in(0x50, 0x5f):
				return "zen"
			case in(0x30, 0x4f), in(0x60, 0x7f), in(0x90, 0x91), in(0xa0, 0xaf):
				return "zen2"
			}
		case 0x19:
			switch {
			case in(0x00, 0x0f), in(0x20, 0x5f):
				return "zen3"
			case in(0x10, 0x1f), in(0x60, 0xaf):
				return "zen4"
			}
		case 0x1a:
			switch {
			case in(0x00, 0x2f), in(0x40, 0x4f), in(0x60, 0x7f):
				return "zen5"
			case in(0x50, 0x5f), in(0x80, 0xaf), in(0xc0, 0xcf):
				return "zen6"
			}
		}
	case "GenuineIntel":
		if family != 6 {
			return ""
		}
		switch model {
		case 0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6:
			return "skylake" // and its client derivatives (Kaby, Coffee, Comet Lake)
		case 0x55:
			return "skylake-x" // also Cascade Lake and Cooper Lake (told apart by stepping)
		case 0x7d, 0x7e:
			return "icelake"
		case 0x6a, 0x6c:
			return "icelake-server"
		case 0x8c, 0x8d:
			return "tigerlake"
		case 0x97, 0x9a, 0xbe:
			return "alderlake"
		case 0xb7, 0xba, 0xbf:
			return "raptorlake"
		case 0x8f:
			return "sapphirerapids"
		case 0xcf:
			return "emeraldrapids"
		case 0xad, 0xae:
			return "graniterapids"
		case 0xaf:
			return "sierraforest"
		}
	}
	return ""
}

// fma512Units infers from the microarchitecture, the model and the brand
// string how many 512-bit FMA operations a core starts per cycle (0:
// unknown, or no AVX-512):
//
//   - zen4: 1 (512-bit operations run as two halves on 256-bit units).
//   - zen5: 2 on server (EPYC 9005, models 0x00-0x1f) and desktop
//     (Granite Ridge, 0x40-0x4f) parts, which have full 512-bit datapaths;
//     1 on the mobile parts (Strix Point 0x20-0x2f, Krackan 0x60-0x6f),
//     which keep 256-bit ones; unknown otherwise.
//   - skylake-x (Skylake-SP, Cascade Lake, Cooper Lake): 2 on Xeon Platinum
//     and Gold 6xxx (the second unit on port 5), 1 on Gold 5xxx, Silver and
//     Bronze; unknown when the brand string does not say (some clouds).
//   - icelake-server, sapphirerapids, emeraldrapids, graniterapids: 2
//     (every Xeon SP of these generations has both units).
//   - icelake, tigerlake (client): 1.
func fma512Units(arch string, model int, brand string) int {
	switch arch {
	case "zen4":
		return 1
	case "zen5":
		switch {
		case model <= 0x1f, model >= 0x40 && model <= 0x4f:
			return 2
		case model >= 0x20 && model <= 0x2f, model >= 0x60 && model <= 0x6f:
			return 1
		}
	case "skylake-x":
		switch {
		case strings.Contains(brand, "Platinum"), strings.Contains(brand, "Gold 6"):
			return 2
		case strings.Contains(brand, "Gold 5"), strings.Contains(brand, "Silver"), strings.Contains(brand, "Bronze"):
			return 1
		}
	case "icelake-server", "sapphirerapids", "emeraldrapids", "graniterapids":
		return 2
	case "icelake", "tigerlake":
		return 1
	}
	return 0
}

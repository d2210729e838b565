package cpu

import "testing"

// TestMicroarch checks the classification by vendor, family and model.
func TestMicroarch(t *testing.T) {
	for _, tc := range []struct {
		vendor        string
		family, model int
		want          string
	}{
		{"AuthenticAMD", 0x17, 0x01, "zen"},         // Naples
		{"AuthenticAMD", 0x17, 0x31, "zen2"},        // Rome
		{"AuthenticAMD", 0x19, 0x01, "zen3"},        // Milan
		{"AuthenticAMD", 0x19, 0x21, "zen3"},        // Vermeer
		{"AuthenticAMD", 0x19, 0x11, "zen4"},        // Genoa
		{"AuthenticAMD", 0x19, 0x61, "zen4"},        // Raphael
		{"AuthenticAMD", 0x19, 0xa0, "zen4"},        // Bergamo
		{"AuthenticAMD", 0x19, 0xb0, ""},            // not in the table
		{"AuthenticAMD", 0x1a, 0x02, "zen5"},        // Turin
		{"AuthenticAMD", 0x1a, 0x11, "zen5"},        // Turin dense
		{"AuthenticAMD", 0x1a, 0x24, "zen5"},        // Strix Point
		{"AuthenticAMD", 0x1a, 0x44, "zen5"},        // Granite Ridge
		{"AuthenticAMD", 0x1a, 0x50, "zen6"},        // Venice
		{"AuthenticAMD", 0x1a, 0x30, ""},            // a gap
		{"AuthenticAMD", 6, 0x8f, ""},               // an Intel model number under AMD
		{"GenuineIntel", 6, 0x55, "skylake-x"},      // Skylake-SP, Cascade Lake
		{"GenuineIntel", 6, 0x6a, "icelake-server"}, // Ice Lake SP
		{"GenuineIntel", 6, 0x7e, "icelake"},        // Ice Lake client
		{"GenuineIntel", 6, 0x8f, "sapphirerapids"}, // Sapphire Rapids
		{"GenuineIntel", 6, 0xcf, "emeraldrapids"},  // Emerald Rapids
		{"GenuineIntel", 6, 0xad, "graniterapids"},  // Granite Rapids
		{"GenuineIntel", 6, 0x9e, "skylake"},        // Coffee Lake
		{"GenuineIntel", 0x19, 0x01, ""},            // family 19 not in the table
		{"GenuineIntel", 0x1a, 0x02, ""},            // an AMD family under Intel
		{"HygonGenuine", 0x18, 0x01, ""},            // Hygon: not classified
		{"", 0, 0, ""},                              // nothing known
	} {
		if got := microarch(tc.vendor, tc.family, tc.model); got != tc.want {
			t.Errorf("microarch(%q, %#x, %#x) = %q, want %q", tc.vendor, tc.family, tc.model, got, tc.want)
		}
	}
}

// TestFMA512Units checks the inference of 512-bit FMA units per core.
func TestFMA512Units(t *testing.T) {
	for _, tc := range []struct {
		arch  string
		model int
		brand string
		want  int
	}{
		{"zen4", 0x11, "AMD EPYC 9R14 96-Core Processor", 1},
		{"zen5", 0x02, "AMD EPYC 9755 128-Core Processor", 2},
		{"zen5", 0x44, "AMD Ryzen 9 9950X 16-Core Processor", 2},
		{"zen5", 0x24, "AMD Ryzen AI 9 HX 370", 1},
		{"zen5", 0x60, "AMD Ryzen AI 7 350", 1},
		{"zen5", 0x70, "AMD RYZEN AI MAX+ 395", 0},
		{"zen3", 0x01, "AMD EPYC 7R13 Processor", 0},
		{"skylake-x", 0x55, "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", 2},
		{"skylake-x", 0x55, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", 2},
		{"skylake-x", 0x55, "Intel(R) Xeon(R) Gold 5118 CPU @ 2.30GHz", 1},
		{"skylake-x", 0x55, "Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz", 1},
		{"skylake-x", 0x55, "Intel(R) Xeon(R) CPU @ 2.00GHz", 0},
		{"icelake-server", 0x6a, "Intel(R) Xeon(R) Gold 5318Y CPU @ 2.10GHz", 2},
		{"sapphirerapids", 0x8f, "Intel(R) Xeon(R) Platinum 8480+", 2},
		{"emeraldrapids", 0xcf, "INTEL(R) XEON(R) PLATINUM 8592+", 2},
		{"graniterapids", 0xad, "Intel(R) Xeon(R) 6980P", 2},
		{"icelake", 0x7e, "Intel(R) Core(TM) i7-1065G7 CPU @ 1.30GHz", 1},
		{"skylake", 0x9e, "Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz", 0},
		{"", 0, "", 0},
	} {
		if got := fma512Units(tc.arch, tc.model, tc.brand); got != tc.want {
			t.Errorf("fma512Units(%q, %#x, %q) = %d, want %d", tc.arch, tc.model, tc.brand, got, tc.want)
		}
	}
}

package cpu

import "testing"

func TestApplyMIDR(t *testing.T) {
	tests := []struct {
		text                    string
		ok                      bool
		vendor, brand           string
		family, model, stepping int
	}{
		{"0x00000000410fd0c1\n", true, "ARM", "Neoverse-N1", 0, 0xd0c, 1}, // r0p1
		{"0x00000000411fd401", true, "ARM", "Neoverse-V1", 1, 0xd40, 1},   // r1p1
		{"0x00000000410fd4f0", true, "ARM", "Neoverse-V2", 0, 0xd4f, 0},
		{"0x00000000410f0010", true, "ARM", "", 0, 0x001, 0},     // a part not in the table
		{"0x00000000610f0220\n", true, "Apple", "", 0, 0x022, 0}, // Apple M1 Icestorm under Linux
		{"0x00000000c00fac30", true, "Ampere", "", 0, 0xac3, 0},
		{"0x00000000ff0f0010", true, "arm64-0xff", "", 0, 0x001, 0},
		{"", false, "", "", 0, 0, 0},
		{"0x", false, "", "", 0, 0, 0},
		{"410fd0c1", false, "", "", 0, 0, 0},
		{"0xzz", false, "", "", 0, 0, 0},
		{"0x0000000000000000", false, "", "", 0, 0, 0},
		{"0x1000000000000000", false, "", "", 0, 0, 0}, // reserved upper half set
		{"0x00000000410fd0c1ff", false, "", "", 0, 0, 0},
		{"0x-1", false, "", "", 0, 0, 0},
	}
	for _, tc := range tests {
		var i Info
		ok := applyMIDR(&i, tc.text)
		if ok != tc.ok || i.Vendor != tc.vendor || i.Brand != tc.brand || i.Family != tc.family || i.Model != tc.model || i.Stepping != tc.stepping {
			t.Errorf("applyMIDR(%q) = %v, %q %q %d %#x %d; want %v, %q %q %d %#x %d", tc.text, ok, i.Vendor, i.Brand, i.Family, i.Model, i.Stepping,
				tc.ok, tc.vendor, tc.brand, tc.family, tc.model, tc.stepping)
		}
	}
}

func FuzzApplyMIDR(f *testing.F) {
	for _, s := range []string{"0x00000000410fd0c1\n", "0x", "", "0xffffffff", "0x00000000610f0220"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var i Info
		if !applyMIDR(&i, s) {
			if i != (Info{}) {
				t.Fatalf("applyMIDR(%q) failed but changed the Info", s)
			}
			return
		}
		if i.Vendor == "" || i.Model < 0 || i.Model > 0xfff || i.Family > 0xf || i.Stepping > 0xf {
			t.Fatalf("applyMIDR(%q) gave %+v", s, i)
		}
	})
}

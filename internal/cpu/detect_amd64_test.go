//go:build amd64 && !noasm

package cpu

import (
	"testing"

	syscpu "golang.org/x/sys/cpu"
)

// TestDetectMatchesXSys compares the features found here with
// golang.org/x/sys/cpu's reading of the same CPU (which gates AVX-512
// BF16 and AVX-VNNI like Features, but not AMX on the OS).
func TestDetectMatchesXSys(t *testing.T) {
	d, x := Detect(), syscpu.X86
	for _, tc := range []struct {
		name      string
		got, want bool
	}{
		{"AVX2", d.AVX2, x.HasAVX2},
		{"FMA", d.FMA, x.HasFMA},
		{"AVX512F", d.AVX512F, x.HasAVX512F},
		{"AVX512DQ", d.AVX512DQ, x.HasAVX512DQ},
		{"AVX512BW", d.AVX512BW, x.HasAVX512BW},
		{"AVX512VL", d.AVX512VL, x.HasAVX512VL},
		{"AVX512VNNI", d.AVX512VNNI, x.HasAVX512VNNI},
		{"AVX512BF16", d.AVX512BF16, x.HasAVX512BF16},
		{"AVXVNNI", d.AVXVNNI, x.HasAVXVNNI},
		{"AMXTile", d.Reported.AMXTile, x.HasAMXTile},
		{"AMXBF16", d.Reported.AMXBF16, x.HasAMXBF16},
		{"AMXInt8", d.Reported.AMXInt8, x.HasAMXInt8},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, golang.org/x/sys/cpu says %v", tc.name, tc.got, tc.want)
		}
	}
	if d.Vendor == "" || d.Family == 0 {
		t.Errorf("no vendor or family: %+v", d)
	}
	t.Logf("%s: %s, %s, L1d %d KiB, L2 %d KiB, L3 %d KiB, %d FMA-512 units, best %s",
		d.Key(), d.Brand, d.Microarch, d.L1D>>10, d.L2>>10, d.L3>>10, d.FMA512Units, d.Best())
}

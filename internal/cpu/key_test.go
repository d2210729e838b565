package cpu

import "testing"

// TestKey checks the tuning-file key.
func TestKey(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Vendor: "AuthenticAMD", Family: 25, Model: 17, Stepping: 1, Brand: "AMD EPYC 9R14 96-Core Processor"},
			"AuthenticAMD-25-17-1-AMD_EPYC_9R14_96-Core_Processor"},
		{Info{Vendor: "GenuineIntel", Family: 6, Model: 143, Stepping: 8, Brand: "Intel(R) Xeon(R) Platinum 8480+"},
			"GenuineIntel-6-143-8-Intel_R_Xeon_R_Platinum_8480"},
		{Info{Vendor: "GenuineIntel", Family: 6, Model: 85, Stepping: 7, Brand: "Intel(R) Xeon(R) CPU @ 2.00GHz"},
			"GenuineIntel-6-85-7-Intel_R_Xeon_R_CPU_2.00GHz"},
		{Info{Vendor: "AuthenticAMD", Family: 26, Model: 2, Stepping: 1, Brand: "../x/y\\z"}, "AuthenticAMD-26-2-1-.._x_y_z"},
		{Info{Vendor: "AuthenticAMD", Family: 26, Model: 2, Stepping: 1}, "AuthenticAMD-26-2-1"},
		{Info{}, "unknown-0-0-0"},
	} {
		if got := tc.info.Key(); got != tc.want {
			t.Errorf("%+v.Key() = %q, want %q", tc.info, got, tc.want)
		}
	}
}

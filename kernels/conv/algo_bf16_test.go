package conv

import "testing"

// TestDirectBF16Pays checks the bf16 algorithm rules at the layers they
// were measured on, and that AMX tiles send every layer to Im2colBF16.
func TestDirectBF16Pays(t *testing.T) {
	for _, tc := range []struct {
		in, out, hw, s int
		amx            bool
		want           [3]bool // forward, weight gradient, input gradient
	}{
		{16, 16, 32, 1, false, [3]bool{true, true, true}},
		{128, 128, 16, 1, false, [3]bool{true, true, true}},
		{256, 256, 8, 1, false, [3]bool{false, false, false}},
		{512, 512, 4, 1, false, [3]bool{false, false, false}},
		{16, 32, 32, 2, false, [3]bool{false, true, true}},
		{64, 128, 32, 2, false, [3]bool{false, false, true}},
		{128, 256, 16, 2, false, [3]bool{false, false, false}},
		{16, 16, 32, 1, true, [3]bool{false, false, false}},
		{16, 32, 32, 2, true, [3]bool{false, false, false}},
	} {
		g := Shape{N: 8, In: tc.in, Out: tc.out, H: tc.hw, W: tc.hw, K: 3, S: tc.s, P: 1, ChannelMajor: true}.geomBF16()
		f, w, i := directBF16Pays(g, tc.amx)
		if got := [3]bool{f, w, i}; got != tc.want {
			t.Errorf("%d -> %d, %dx%d, stride %d, amx %v: %v, want %v", tc.in, tc.out, tc.hw, tc.hw, tc.s, tc.amx, got, tc.want)
		}
	}
}

package a64

import "testing"

// TestFMLAElem compares the encoder with GNU as (binutils 2.40,
// aarch64-linux-gnu-as, then objdump -d) on the instructions given.
func TestFMLAElem(t *testing.T) {
	for _, tc := range []struct {
		d, n, m, idx int
		want         uint32
		asm          string
	}{
		{0, 26, 24, 0, 0x4f981340, "fmla v0.4s, v26.4s, v24.s[0]"},
		{3, 26, 24, 1, 0x4fb81343, "fmla v3.4s, v26.4s, v24.s[1]"},
		{8, 28, 24, 2, 0x4f981b88, "fmla v8.4s, v28.4s, v24.s[2]"},
		{23, 28, 25, 3, 0x4fb91b97, "fmla v23.4s, v28.4s, v25.s[3]"},
		{0, 26, 31, 0, 0x4f9f1340, "fmla v0.4s, v26.4s, v31.s[0]"},
		{0, 1, 2, 0, 0x4f821020, "fmla v0.4s, v1.4s, v2.s[0]"},
		{31, 15, 16, 3, 0x4fb019ff, "fmla v31.4s, v15.4s, v16.s[3]"},
		{17, 30, 7, 2, 0x4f871bd1, "fmla v17.4s, v30.4s, v7.s[2]"},
	} {
		if got := FMLAElem(tc.d, tc.n, tc.m, tc.idx); got != tc.want {
			t.Errorf("%s: encoded %#08x, GNU as %#08x", tc.asm, got, tc.want)
		}
	}
}

// TestFMLAElemPanics checks that out-of-range operands panic.
func TestFMLAElemPanics(t *testing.T) {
	for _, args := range [][4]int{{32, 0, 0, 0}, {0, -1, 0, 0}, {0, 0, 32, 0}, {0, 0, 0, 4}, {0, 0, 0, -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("FMLAElem%v did not panic", args)
				}
			}()
			FMLAElem(args[0], args[1], args[2], args[3])
		}()
	}
}

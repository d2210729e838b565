package evex

import "testing"

// TestDPBF16PS holds the encoding to GNU as 2.40's (objdump of
// "vdpbf16ps %zmmSRC2, %zmmSRC1, %zmmDST").
func TestDPBF16PS(t *testing.T) {
	for _, c := range []struct {
		dst, src1, src2 int
		want            string
	}{
		{0, 24, 31, "BYTE $0x62; BYTE $0x92; BYTE $0x3e; BYTE $0x40; BYTE $0x52; BYTE $0xc7"},
		{26, 27, 30, "BYTE $0x62; BYTE $0x02; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd6"},
		{23, 25, 31, "BYTE $0x62; BYTE $0x82; BYTE $0x36; BYTE $0x40; BYTE $0x52; BYTE $0xff"},
		{1, 2, 3, "BYTE $0x62; BYTE $0xf2; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xcb"},
		{9, 17, 12, "BYTE $0x62; BYTE $0x52; BYTE $0x76; BYTE $0x40; BYTE $0x52; BYTE $0xcc"},
	} {
		if got := DPBF16PS(c.dst, c.src1, c.src2); got != c.want {
			t.Errorf("DPBF16PS(%d, %d, %d) = %s, want %s", c.dst, c.src1, c.src2, got, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("DPBF16PS(32, 0, 0) did not panic")
		}
	}()
	DPBF16PS(32, 0, 0)
}

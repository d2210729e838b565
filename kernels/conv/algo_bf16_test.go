package conv

import (
	"testing"

	"github.com/duel-ssl/duel/kernels/gemm"
)

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

// TestWinogradBF16WeightGradPays checks the WinogradBF16 weight-gradient
// rule at the layers it was measured on and at its edges (strides,
// kernels, few tiles, AMX), and that AutoAlgosBF16 applies it.
func TestWinogradBF16WeightGradPays(t *testing.T) {
	for _, tc := range []struct {
		in, out, hw, n, k, s int
		amx                  bool
		want                 bool
	}{
		{128, 128, 16, 32, 3, 1, false, true},
		{256, 256, 8, 32, 3, 1, false, true},
		{512, 512, 4, 32, 3, 1, false, true},
		{128, 128, 4, 128, 3, 1, false, false}, // narrow maps
		{64, 64, 32, 32, 3, 1, false, false},   // too few channels
		{16, 16, 32, 128, 3, 1, false, false},
		{512, 512, 4, 8, 3, 1, false, false},   // 32 tiles
		{128, 256, 16, 32, 3, 2, false, false}, // stride 2
		{256, 256, 8, 32, 1, 1, false, false},  // 1x1
		{256, 256, 8, 32, 3, 1, true, false},   // AMX tiles
	} {
		s := Shape{N: tc.n, In: tc.in, Out: tc.out, H: tc.hw, W: tc.hw, K: tc.k, S: tc.s, P: tc.k / 2, ChannelMajor: true}
		if got := winogradBF16WeightGradPays(s.geomBF16(), tc.amx); got != tc.want {
			t.Errorf("%d -> %d, %dx%d, batch %d, %dx%d stride %d, amx %v: %v, want %v", tc.in, tc.out, tc.hw, tc.hw, tc.n, tc.k, tc.k, tc.s, tc.amx, got, tc.want)
		}
		if tc.amx {
			continue
		}
		a := AutoAlgosBF16(s, true)
		if (a.WeightGrad == WinogradBF16) != (tc.want && !gemm.AMX()) || a.Forward == WinogradBF16 || a.InputGrad == WinogradBF16 {
			t.Errorf("%+v: AutoAlgosBF16 = %+v", s, a)
		}
		if a := AutoAlgosBF16(s, false); a != (Algos{Im2colBF16, Im2colBF16, Im2colBF16}) {
			t.Errorf("%+v: AutoAlgosBF16 without the assembly kernels = %+v", s, a)
		}
	}
}

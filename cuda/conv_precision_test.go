package cuda

import (
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
)

// TestConvPrecisionSetting checks DefaultConvPrecision ($DUEL_CUDA_CONV_PRECISION,
// else $DUEL_CUDA_PRECISION, else TF32), that SetPrecision sets the
// convolutions' precision too and SetConvPrecision the convolutions' alone,
// the FP32 fallback below compute capability 8.0, and that the convolutions
// pick their kernels by the convolutions' precision, whatever the
// products', without a device.
func TestConvPrecisionSetting(t *testing.T) {
	for _, tc := range []struct {
		prec, conv string // the environment variables ("" unset)
		want       Precision
		err        string
	}{
		{"", "", TF32, ""},
		{"fp32", "", FP32, ""},
		{"bf16", "", BF16, ""},
		{"", "FP32", FP32, ""},
		{"bf16", "tf32", TF32, ""},
		{"", "half", FP32, EnvConvPrecision + `="half": expected fp32, tf32 or bf16`},
		{"half", "", FP32, EnvPrecision + `="half"`},
	} {
		t.Setenv(EnvPrecision, tc.prec)
		t.Setenv(EnvConvPrecision, tc.conv)
		p, err := DefaultConvPrecision()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s=%q %s=%q: DefaultConvPrecision() = %v, %v; want an error with %q", EnvPrecision, tc.prec, EnvConvPrecision, tc.conv, p, err, tc.err)
			}
			continue
		}
		if err != nil || p != tc.want {
			t.Errorf("%s=%q %s=%q: DefaultConvPrecision() = %v, %v; want %v", EnvPrecision, tc.prec, EnvConvPrecision, tc.conv, p, err, tc.want)
		}
	}
	for _, tc := range []struct {
		cc         int
		prec, conv Precision // set by SetPrecision, then SetConvPrecision
		wantProd   Precision
		wantConv   Precision
	}{
		{70, FP32, TF32, FP32, FP32},
		{70, BF16, BF16, FP32, FP32},
		{80, FP32, TF32, FP32, TF32},
		{80, TF32, FP32, TF32, FP32},
		{90, BF16, BF16, BF16, BF16},
		{0, FP32, BF16, FP32, BF16}, // unknown capability (the emulator): tensor cores allowed
	} {
		be, err := newBackend(capHost{cudatest.NewHost(), tc.cc}, 32)
		if err != nil {
			t.Fatal(err)
		}
		if be.ConvPrecision() != FP32 {
			t.Errorf("newBackend's convolution precision %v, want FP32", be.ConvPrecision())
		}
		if be.SetPrecision(tc.conv); be.ConvPrecision() != be.Precision() {
			t.Errorf("sm_%d: SetPrecision(%v): convolutions %v, products %v; want the same", tc.cc, tc.conv, be.ConvPrecision(), be.Precision())
		}
		be.SetPrecision(tc.prec)
		got := be.SetConvPrecision(tc.conv)
		if got != tc.wantConv || be.ConvPrecision() != tc.wantConv || be.Precision() != tc.wantProd {
			t.Errorf("sm_%d: SetPrecision(%v), SetConvPrecision(%v) = %v: products %v, convolutions %v; want %v, %v",
				tc.cc, tc.prec, tc.conv, got, be.Precision(), be.ConvPrecision(), tc.wantProd, tc.wantConv)
		}
		for _, pass := range []string{"fwd", "dgrad", "wgrad"} {
			k, ok := be.convTCFor(pass, 200)
			if want := tc.wantConv != FP32; ok != want || ok && !strings.Contains(k.name, tc.wantConv.String()) {
				t.Errorf("sm_%d: products %v, convolutions %v: the %s pass runs %q (tensor cores %v); want conv_tc's %v kernels: %v",
					tc.cc, be.Precision(), be.ConvPrecision(), pass, k.name, ok, tc.wantConv, want)
			}
		}
	}
}

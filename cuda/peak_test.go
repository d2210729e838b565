package cuda

import (
	"math"
	"testing"
)

// TestPeakGFLOPS checks the peak rates against NVIDIA's datasheet figures
// (A100 at 1410 MHz; an H100 SXM at the 1980 MHz its driver reports, the
// datasheet's 494.7 TF32 being at 1830 MHz) and that capabilities and
// precisions the table does not know give no figure.
func TestPeakGFLOPS(t *testing.T) {
	for _, tc := range []struct {
		cc, sms, clock int
		p              Precision
		want           float64 // 0: not known
	}{
		{80, 108, 1410000, TF32, 155934.72},
		{80, 108, 1410000, BF16, 311869.44},
		{80, 108, 1410000, FP32, 19491.84},
		{90, 132, 1830000, TF32, 494714.88},
		{90, 132, 1980000, TF32, 535265.28},
		{90, 132, 1980000, BF16, 1070530.56},
		{86, 82, 1695000, TF32, 35581.44},
		{70, 80, 1530000, TF32, 0},
		{70, 80, 1530000, FP32, 15667.2},
		{100, 148, 1965000, TF32, 0},
		{90, 132, 0, TF32, 0},
		{90, 0, 1980000, TF32, 0},
	} {
		got, ok := peakGFLOPS(tc.cc, tc.sms, tc.clock, tc.p)
		if ok != (tc.want > 0) || math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("peakGFLOPS(sm_%d, %d SMs, %d kHz, %v) = %v, %v; want %v", tc.cc, tc.sms, tc.clock, tc.p, got, ok, tc.want)
		}
	}
}

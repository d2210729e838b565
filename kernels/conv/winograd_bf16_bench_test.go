package conv

import (
	"fmt"
	"testing"
)

// BenchmarkWinogradBF16 times each pass of the 3x3 stride-1 layers of
// ResNet-18-w16 at batch 128 and of ResNet-18 (and ResNet-50's
// bottlenecks) at batch 32 in WinogradBF16 beside Im2colBF16 and, where
// the direct kernels run, DirectBF16, on the same operands (best of 5
// each, alternating), and reports WinogradBF16's nominal GFLOP/s (the
// direct convolution's flops) and its ratios to the others (x_im2colbf16,
// x_directbf16: above 1, WinogradBF16 is faster). The rule of
// AutoAlgosBF16 (winogradBF16WeightGradPays) comes from these ratios.
func BenchmarkWinogradBF16(b *testing.B) {
	if !FastBF16() {
		b.Skip("no bfloat16 assembly kernels on this CPU (AVX512_BF16)")
	}
	for _, s := range resnetBF16Layers(false) {
		for p, pass := range bf16Passes {
			b.Run(fmt.Sprintf("%d-%d-%dx%d-n%d/%s", s.In, s.Out, s.H, s.W, s.N, pass), func(b *testing.B) {
				algos, names := []Algo{WinogradBF16, Im2colBF16}, []string{"x_im2colbf16"}
				if Applies(s, DirectBF16, true) {
					algos, names = append(algos, DirectBF16), append(names, "x_directbf16")
				}
				benchPassRatios(b, s, p, algos, names)
			})
		}
	}
}

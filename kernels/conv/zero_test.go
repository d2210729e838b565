package conv

import (
	"fmt"
	"testing"
)

// TestZeroSizesEveryAlgorithm runs every pass of every algorithm that
// applies on convolutions without images, input or output channels, at
// strides 1 and 2: none may panic (a GEMM of zero stride does), and the
// outputs they store must be zero (their sums are empty).
func TestZeroSizesEveryAlgorithm(t *testing.T) {
	for _, stride := range []int{1, 2} {
		for _, dims := range [][3]int{{0, 3, 4}, {2, 0, 4}, {2, 3, 0}} {
			s := Shape{N: dims[0], In: dims[1], Out: dims[2], H: 16, W: 16, K: 3, S: stride, P: 1, ChannelMajor: true}
			for _, al := range []Algo{Im2col, Winograd, Direct, Im2colBF16, DirectBF16, WinogradBF16} {
				if !Applies(s, al, true) {
					continue
				}
				for p, pass := range []string{"forward", "weightgrad", "inputgrad"} {
					t.Run(fmt.Sprintf("n%d-in%d-out%d-s%d/%v/%s", s.N, s.In, s.Out, stride, al, pass), func(t *testing.T) {
						run := newPassRun(s, make([]float32, s.Out*s.In*9), make([]float32, s.N*s.In*s.H*s.W), make([]float32, s.N*s.Out*s.OutH()*s.OutW()))
						out := [][]float32{run.yd, run.dw, run.dx}[p]
						for i := range out {
							out[i] = 1 // must be stored over
						}
						run.run(al, p)
						for i, v := range out {
							if v != 0 {
								t.Fatalf("output[%d] = %g, want 0 (an empty sum)", i, v)
							}
						}
					})
				}
			}
		}
	}
}

package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
)

// convWtCases are the weights of TestConvWt* (outputs, inputs, taps):
// empty ones, one pair, tiles cut at both edges, 1 x 1 and 3 x 3 kernels,
// and taps enough (7 x 7, 11 x 11) to shrink the tiles below 32.
var convWtCases = [][3]int{{0, 3, 9}, {3, 0, 1}, {1, 1, 1}, {33, 65, 9}, {64, 64, 1}, {70, 31, 1}, {5, 7, 49}, {40, 3, 121}}

// testConvWt checks conv_wt_f32 (convWt) against the transpose
// wt[c][o*kk + t] = w[o][c][t], exactly, and that it writes nothing past
// wt's end.
func testConvWt(t *testing.T, be *Backend) {
	r := rand.New(rand.NewPCG(5, 8))
	for _, c := range convWtCases {
		o, in, kk := c[0], c[1], c[2]
		t.Run(fmt.Sprintf("O%dC%dKK%d", o, in, kk), func(t *testing.T) {
			n := o * in * kk
			w := layerRandn(r, n, 1, 0)
			dw := layerDevOp(be, w, 3, n)
			dwt := multiOperand(be, make([]float32, n)) // NaN guards on both sides
			be.convWt("convWt", be.ptr("test", dwt.Buf, dwt.Offset), be.ptr("test", dw.Buf, dw.Offset), o, in, kk)
			want := make([]float32, n)
			for oi := range o {
				for ci := range in {
					for k := range kk {
						want[(ci*o+oi)*kk+k] = w[(oi*in+ci)*kk+k]
					}
				}
			}
			multiCheck(t, be, "wt", dwt, want)
		})
	}
}

// TestConvWtOnHost runs convWt with conv_wt_f32 transcribed to Go, tile
// by tile as its launch lays them out.
func TestConvWtOnHost(t *testing.T) {
	h := cudatest.NewHost()
	registerConvKernels(h)
	be, err := newBackend(h, 64)
	if err != nil {
		t.Fatal(err)
	}
	testConvWt(t, be)
}

// TestConvWtEmulated runs conv_wt_f32 on the CPU emulator.
func TestConvWtEmulated(t *testing.T) {
	be, err := newBackend(cudatest.NewEmulator(t), 64)
	if err != nil {
		t.Fatal(err)
	}
	testConvWt(t, be)
}

// TestConvWtKernel runs conv_wt_f32 on the GPU.
func TestConvWtKernel(t *testing.T) {
	onGPU(t, testConvWt)
}

package conv

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/internal/scratch"
)

// TestDirectBF16 runs the three direct passes in bfloat16 on every shape
// of the direct kernels above (odd channel counts, odd batches, zero
// sizes, stride 2, maps of one row or column), channel-major and
// sample-major, storing and accumulating, against the float64 convolution
// of the rounded factors: on the VDPBF16PS kernels where the CPU has them,
// else on their Go loops.
func TestDirectBF16(t *testing.T) {
	t.Logf("bfloat16 assembly kernels: %v", FastBF16())
	r := rand.New(rand.NewPCG(31, 32))
	var cases []Shape
	for _, sh := range shapes {
		out, in, n, h, w, s := sh[0], sh[1], sh[2], sh[3], sh[4], sh[5]
		if !Supported(h, w, s) {
			continue
		}
		for _, cm := range []bool{true, false} {
			cases = append(cases, Shape{N: n, In: in, H: h, W: w, Out: out, K: 3, S: s, P: 1, ChannelMajor: cm})
		}
	}
	cases = append(cases,
		Shape{N: 9, In: 16, H: 32, W: 32, Out: 16, K: 3, S: 1, P: 1, ChannelMajor: true}, // chunks of an odd batch
		Shape{N: 7, In: 15, H: 16, W: 16, Out: 33, K: 3, S: 2, P: 1},                     // odd everything, strided
	)
	for _, s := range cases {
		name := fmt.Sprintf("%d-%d-n%d-%dx%d-s%d-cm%v", s.In, s.Out, s.N, s.H, s.W, s.S, s.ChannelMajor)
		t.Run(name, func(t *testing.T) {
			g := s.geom()
			pl := NewPlan(s.H, s.W, s.S)
			w := randSlice(r, g.cout*g.ckk())
			x := randSlice(r, g.cin*g.n*g.h*g.w)
			dy := randSlice(r, g.cout*g.n*g.ohw())
			ref := convBF16Ref(s, w, x, dy)
			sc := new(scratch.Free)
			for _, acc := range []bool{false, true} {
				y := make([]float32, len(ref.y))
				DirectForwardBF16(sc, s, pl, w, x, y)
				nearBF16(t, "y", y, ref.y, ref.yScale, g.ckk())
				dw := randSlice(r, len(w))
				dwWant := append([]float64(nil), ref.dw...)
				if acc {
					for i := range dwWant {
						dwWant[i] += float64(dw[i])
					}
				}
				DirectWeightGradBF16(sc, s, pl, x, dy, dw, acc)
				nearBF16(t, "dw", dw, dwWant, ref.dwScale, g.n*g.ohw()+g.n)
				dx := randSlice(r, len(x))
				dxWant := append([]float64(nil), ref.dx...)
				if acc {
					for i := range dxWant {
						dxWant[i] += float64(dx[i])
					}
				}
				DirectInputGradBF16(sc, s, pl, w, dy, dx, acc)
				nearBF16(t, "dx", dx, dxWant, ref.dxScale, g.cout*9+2)
			}
		})
	}
}

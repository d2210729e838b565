package conv

import (
	"fmt"
	"math"
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
				dw, dx := randSlice(r, len(w)), randSlice(r, len(x))
				dwWant, dwScale := accumulated(ref.dw, ref.dwScale, dw, acc)
				DirectWeightGradBF16(sc, s, pl, x, dy, dw, acc)
				nearBF16(t, "dw", dw, dwWant, dwScale, g.n*g.ohw()+g.n)
				dxWant, dxScale := accumulated(ref.dx, ref.dxScale, dx, acc)
				DirectInputGradBF16(sc, s, pl, w, dy, dx, acc)
				nearBF16(t, "dx", dx, dxWant, dxScale, g.cout*9+2)
			}
		})
	}
}

// FuzzDirectBF16 runs the three DirectBF16 passes on small random shapes
// the direct kernels handle (maps of whole 16-position vectors at stride 1
// or 2, any channel and image counts up to 19, zero included, either
// layout), storing or accumulating, against the float64 convolution of the
// rounded factors, as TestDirectBF16 does on fixed shapes.
func FuzzDirectBF16(f *testing.F) {
	f.Add(uint8(3), uint8(5), uint8(7), uint8(0), uint8(0), uint64(1))
	f.Add(uint8(1), uint8(16), uint8(1), uint8(3), uint8(1), uint64(2))
	f.Add(uint8(0), uint8(2), uint8(3), uint8(5), uint8(2), uint64(3))
	f.Add(uint8(4), uint8(0), uint8(9), uint8(6), uint8(3), uint64(4))
	f.Fuzz(func(t *testing.T, n, in, out, geom, flags uint8, seed uint64) {
		// h x w maps of whole vectors at both strides (h*w/4 a multiple of 16).
		sizes := [][2]int{{8, 8}, {16, 8}, {8, 16}, {16, 16}, {4, 32}, {32, 4}, {2, 64}}
		hw := sizes[int(geom)%len(sizes)]
		s := Shape{N: int(n) % 20, In: int(in) % 20, Out: int(out) % 20, H: hw[0], W: hw[1], K: 3, S: 1 + int(flags)&1, P: 1, ChannelMajor: flags&2 != 0}
		if !Supported(s.H, s.W, s.S) {
			t.Skip()
		}
		acc := flags&4 != 0
		r := rand.New(rand.NewPCG(seed, 33))
		g := s.geom()
		pl := NewPlan(s.H, s.W, s.S)
		w := randSlice(r, g.cout*g.ckk())
		x := randSlice(r, g.cin*g.n*g.h*g.w)
		dy := randSlice(r, g.cout*g.n*g.ohw())
		ref := convBF16Ref(s, w, x, dy)
		sc := new(scratch.Free)
		y := make([]float32, len(ref.y))
		DirectForwardBF16(sc, s, pl, w, x, y)
		nearBF16(t, "y", y, ref.y, ref.yScale, g.ckk())
		dw, dx := randSlice(r, len(w)), randSlice(r, len(x))
		dwWant, dwScale := accumulated(ref.dw, ref.dwScale, dw, acc)
		dxWant, dxScale := accumulated(ref.dx, ref.dxScale, dx, acc)
		DirectWeightGradBF16(sc, s, pl, x, dy, dw, acc)
		nearBF16(t, "dw", dw, dwWant, dwScale, g.n*g.ohw()+g.n)
		DirectInputGradBF16(sc, s, pl, w, dy, dx, acc)
		nearBF16(t, "dx", dx, dxWant, dxScale, g.cout*9+2)
	})
}

// accumulated returns the expected gradient and its error scale when a
// pass adds the reference want (error scale scale) into dst (acc), whose
// sum with what was there rounds too, or stores it.
func accumulated(want, scale []float64, dst []float32, acc bool) (w, sc []float64) {
	w, sc = append([]float64(nil), want...), append([]float64(nil), scale...)
	if acc {
		for i, v := range dst {
			w[i] += float64(v)
			sc[i] += math.Abs(float64(v))
		}
	}
	return w, sc
}

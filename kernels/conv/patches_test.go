package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/kernels/gemm"
)

// patchGeoms are convolutions whose patch matrices patchSource must
// reproduce: ResNet's 3x3 "same" layers (the gathered path) on maps of
// 16-multiple sizes, and geometries that take the lane-by-lane path
// (strides 2 and 3, 1x1, 5x5 and 7x7 kernels, maps of 7x7, 1xW, Hx1,
// unpadded and over-padded), in both layouts, with empty batches and
// channels.
var patchGeoms = []geom{
	{n: 3, cin: 5, h: 32, w: 32, k: 3, s: 1, p: 1},
	{n: 4, cin: 3, h: 16, w: 16, k: 3, s: 1, p: 1, xcm: true},
	{n: 5, cin: 7, h: 8, w: 8, k: 3, s: 1, p: 1},
	{n: 6, cin: 2, h: 4, w: 4, k: 3, s: 1, p: 1, xcm: true},
	{n: 2, cin: 3, h: 8, w: 8, k: 5, s: 1, p: 2},
	{n: 2, cin: 2, h: 16, w: 16, k: 7, s: 1, p: 3, xcm: true},
	{n: 3, cin: 4, h: 7, w: 7, k: 3, s: 1, p: 1},
	{n: 3, cin: 4, h: 1, w: 16, k: 3, s: 1, p: 1, xcm: true},
	{n: 3, cin: 4, h: 16, w: 1, k: 3, s: 1, p: 1},
	{n: 2, cin: 5, h: 8, w: 8, k: 3, s: 2, p: 1, xcm: true},
	{n: 2, cin: 3, h: 9, w: 11, k: 3, s: 3, p: 2},
	{n: 4, cin: 6, h: 8, w: 8, k: 1, s: 1, p: 0},
	{n: 2, cin: 3, h: 8, w: 8, k: 3, s: 1, p: 0, xcm: true},
	{n: 0, cin: 3, h: 8, w: 8, k: 3, s: 1, p: 1},
	{n: 2, cin: 0, h: 8, w: 8, k: 3, s: 1, p: 1},
}

// withOut fills in g's output size.
func withOut(g geom) geom {
	g.oh, g.ow = OutSize(g.h, g.k, g.s, g.p), OutSize(g.w, g.k, g.s, g.p)
	return g
}

// nastyInput returns n normal values with NaNs and negative zeros among
// them, so that a value taken from the wrong place or zeroed wrongly shows.
func nastyInput(r *rand.Rand, n int) []float32 {
	x := randSlice(r, n)
	for i := range x {
		switch r.IntN(40) {
		case 0:
			x[i] = float32(math.NaN())
		case 1:
			x[i] = float32(math.Copysign(0, -1))
		}
	}
	return x
}

// chunksOf returns chunks [n0, n0+cnt) of a batch of n images to gather:
// all of it, its second half and its last image.
func chunksOf(n int) [][2]int {
	return [][2]int{{0, n}, {n / 2, n - n/2}, {max(0, n-1), min(1, n)}}
}

// patchMatrix returns im2col's patch matrix of images [n0, n0+cnt) of x
// and its row stride.
func patchMatrix(g geom, x []float32, n0, cnt int) ([]float32, int) {
	ld := cnt * g.ohw()
	col := make([]float32, g.ckk()*ld)
	if ld > 0 {
		g.im2colImages(col, x, n0, cnt, false)
	}
	return col, ld
}

// storedPanels packs panels q0 <= q < q1 of col[p0:p0+kc, j0:j0+nc] (row
// stride ld) element by element, as gemm.PanelSource specifies.
func storedPanels(col []float32, ld, p0, kc, j0, nc, nr, q0, q1 int) []float32 {
	dst := make([]float32, q1*nr*kc)
	for q := q0; q < q1; q++ {
		for p := range kc {
			for j := range nr {
				if c := q*nr + j; c < nc {
					dst[q*nr*kc+p*nr+j] = col[(p0+p)*ld+j0+c]
				}
			}
		}
	}
	return dst
}

// checkPanels asks src for the panels of the block [p0:p0+kc, j0:j0+nc]
// from a random one to the last and compares them, bit for bit, with the
// stored matrix m (row stride ld) packed by the definition; every element
// of the panels must be written.
func checkPanels(t *testing.T, r *rand.Rand, what string, src gemm.PanelSource, m []float32, ld, p0, kc, j0, nc, nr int) {
	t.Helper()
	panels := (nc + nr - 1) / nr
	q0 := 0
	if panels > 1 {
		q0 = r.IntN(panels)
	}
	want := storedPanels(m, ld, p0, kc, j0, nc, nr, q0, panels)
	got := make([]float32, len(want))
	for i := range got {
		got[i] = 7
	}
	clear(got[:q0*nr*kc])
	src.PackPanels(got, p0, kc, j0, nc, nr, q0, panels)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s, nr %d, block p0 %d kc %d j0 %d nc %d, panels [%d,%d): element %d = %v, stored %v", what, nr, p0, kc, j0, nc, q0, panels, i, got[i], want[i])
		}
	}
}

// TestPatchSourcePanels checks patchSource's panels against im2col's
// matrix packed by the definition, for chunks of images in the middle
// of the batch, blocks of rows and columns that start anywhere (inside a
// channel's taps, inside an image), panel widths 4, 16 and 32, with the
// gather tables and without; the inputs hold NaNs and negative zeros so
// that a lane taken from the wrong place or zeroed wrongly shows.
func TestPatchSourcePanels(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, g0 := range patchGeoms {
		g := withOut(g0)
		x := nastyInput(r, g.n*g.cin*g.h*g.w)
		for _, chunk := range chunksOf(g.n) {
			n0, cnt := chunk[0], chunk[1]
			col, ld := patchMatrix(g, x, n0, cnt)
			for _, tabs := range []bool{false, true} {
				src := &patchSource{g: g, x: x, n0: n0, cnt: cnt}
				if tabs && g.gatherShape() {
					src.tabs = g.patchTables()
				}
				for _, nr := range []int{4, 16, 32} {
					for trial := range 4 {
						p0, kc, j0, nc := 0, g.ckk(), 0, ld
						if trial > 0 && g.ckk() > 0 && ld > 0 {
							p0 = r.IntN(g.ckk())
							kc = 1 + r.IntN(g.ckk()-p0)
							j0 = r.IntN(ld) / nr * nr
							if trial == 3 {
								j0 = r.IntN(ld) // not on a panel boundary
							}
							nc = 1 + r.IntN(ld-j0)
						}
						what := fmt.Sprintf("%+v images [%d,%d) tables %v", g, n0, n0+cnt, tabs)
						checkPanels(t, r, what, src, col, ld, p0, kc, j0, nc, nr)
					}
				}
			}
		}
	}
}

// TestGatherRows compares gatherRows (assembly where the CPU has AVX2)
// with gatherRowsGo on random tables, starting taps, channel strides and
// row counts (0 included).
func TestGatherRows(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for trial := range 200 {
		ntap := 1 + r.IntN(25)
		tabs := make([]patchTap, ntap)
		for i := range tabs {
			tabs[i].off = r.IntN(41) - 20
			for j := range tabs[i].mask {
				if r.IntN(3) > 0 {
					tabs[i].mask[j] = ^uint32(0)
				}
			}
		}
		rows, cs, t0 := r.IntN(60), 16+r.IntN(50), r.IntN(ntap)
		chans := (t0+rows)/ntap + 1
		x := randSlice(r, 40+chans*cs+16)
		start := 20
		want := make([]float32, rows*patchPanel)
		got := make([]float32, rows*patchPanel+1)
		got[len(got)-1] = 9
		gatherRowsGo(want, x, start, cs, tabs, t0, rows)
		gatherRows(got, x, start, cs, tabs, t0, rows)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("trial %d (ntap %d t0 %d rows %d cs %d): element %d = %v, want %v", trial, ntap, t0, rows, cs, i, got[i], want[i])
			}
		}
		if got[len(got)-1] != 9 {
			t.Fatalf("trial %d: gatherRows wrote past its %d rows", trial, rows)
		}
	}
}

// TestImplicitPatchesBitIdentical checks that the forward and
// transposed-input-gradient passes give the bits of im2col's matrix
// multiplied by gemm.Sgemm, on geometries that gather their panels (where
// this CPU's GEMM packs 16-wide panels) and ones that do not.
func TestImplicitPatchesBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for _, sh := range [][5]int{{16, 16, 32, 32, 4}, {32, 16, 16, 16, 9}, {64, 64, 8, 8, 7}, {24, 40, 4, 4, 33}, {16, 3, 32, 32, 2}, {7, 5, 7, 7, 3}, {8, 8, 8, 8, 1}} {
		out, in, h, w, n := sh[0], sh[1], sh[2], sh[3], sh[4]
		for _, xcm := range []bool{false, true} {
			s := Shape{N: n, In: in, Out: out, H: h, W: w, K: 3, S: 1, P: 1, ChannelMajor: xcm}
			g := s.geom()
			t.Run(fmt.Sprintf("%v/implicit=%v", s, g.implicitPatches(out)), func(t *testing.T) {
				x, wd := randSlice(r, n*in*h*w), randSlice(r, out*in*9)
				y := make([]float32, out*n*h*w)
				Im2colForward(nil, s, wd, x, y)
				col := make([]float32, g.ckk()*n*g.ohw())
				g.im2colImages(col, x, 0, n, false)
				want := make([]float32, len(y))
				gemm.Sgemm(false, false, out, n*g.ohw(), g.ckk(), 1, wd, g.ckk(), col, n*g.ohw(), 0, want, n*g.ohw())
				same(t, "forward", y, want)

				if !xcm {
					return // the transposed input gradient reads a channel-major input
				}
				// The input gradient of a stride-1 convolution is the
				// transposed convolution of dy (channel-major).
				dy := randSlice(r, out*n*h*w)
				dx := randSlice(r, n*in*h*w)
				dx0 := append([]float32(nil), dx...)
				Im2colInputGrad(nil, s, wd, dy, dx, true)
				wt := make([]float32, in*out*9)
				for co := range out {
					for ci := range in {
						for j := range 9 {
							wt[(ci*out+co)*9+j] = wd[(co*in+ci)*9+8-j]
						}
					}
				}
				tg := geom{n: n, cin: out, h: h, w: w, cout: in, k: 3, s: 1, p: 1, oh: h, ow: w, xcm: true}
				dcol := make([]float32, tg.ckk()*n*h*w)
				tg.im2colImages(dcol, dy, 0, n, false)
				gemm.Sgemm(false, false, in, n*h*w, tg.ckk(), 1, wt, tg.ckk(), dcol, n*h*w, 1, dx0, n*h*w)
				same(t, "input gradient", dx, dx0)
			})
		}
	}
}

// same fails the test at the first element of got whose bits differ from
// want's.
func same(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, want %v (the reference path)", name, i, got[i], want[i])
		}
	}
}

// BenchmarkImplicitPatches times the forward pass of ResNet-18-w16's
// 3x3 layers at batch 128 through the patch source beside im2col + GEMM
// (the previous path), in the same run.
func BenchmarkImplicitPatches(b *testing.B) {
	r := rand.New(rand.NewPCG(37, 38))
	for _, sh := range [][3]int{{16, 32, 128}, {32, 16, 128}, {64, 8, 128}, {128, 4, 128}} {
		c, hw, n := sh[0], sh[1], sh[2]
		s := Shape{N: n, In: c, Out: c, H: hw, W: hw, K: 3, S: 1, P: 1, ChannelMajor: true}
		g := s.geom()
		x, wd := randSlice(r, n*c*hw*hw), randSlice(r, c*c*9)
		y := make([]float32, c*n*hw*hw)
		b.Run(fmt.Sprintf("c%d/%dx%d/implicit=%v", c, hw, hw, g.implicitPatches(c)), func(b *testing.B) {
			for b.Loop() {
				Im2colForward(nil, s, wd, x, y)
			}
			b.ReportMetric(g.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("c%d/%dx%d/im2col", c, hw, hw), func(b *testing.B) {
			chunk, threads, sg, par := coarsePlan(n, g.chunk(), g.flops())
			ckk, ohw := g.ckk(), g.ohw()
			cols := scratchSet(nil, threads, ckk*chunk*ohw)
			for b.Loop() {
				runChunks(n, chunk, threads, false, func(w, n0, cnt int) {
					g.im2colImages(cols[w], x, n0, cnt, par)
					sg(false, false, g.cout, cnt*ohw, ckk, 1, wd, ckk, cols[w], cnt*ohw, 0, y[n0*ohw:], n*ohw)
				})
			}
			b.ReportMetric(g.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

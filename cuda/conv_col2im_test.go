package cuda

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// TestCol2imTaps: conv_col2im_taps<T>_f32 takes phases of up to 4 taps a
// side, a block row per plane up to 65535, and nothing empty.
func TestCol2imTaps(t *testing.T) {
	for _, tc := range []struct {
		s        tensor.ConvShape
		taps     int
		ok       bool
		gx, gy   int
		describe string
		sms      int // 0: 132
	}{
		{tensor.ConvShape{N: 256, In: 128, H: 32, W: 32, K: 3, S: 2, P: 1}, 2, true, 4, 2112, "ResNet-50's 3 x 3 at stride 2: 64 blocks a multiprocessor", 0},
		{tensor.ConvShape{N: 256, In: 256, H: 8, W: 8, K: 1, S: 2}, 1, true, 1, 8448, "8 x 8 maps: a block a map", 0},
		{tensor.ConvShape{N: 256, In: 256, H: 1000, W: 1000, K: 1, S: 2}, 1, true, 3907, 2, "large maps: at least 2 rows", 0},
		{tensor.ConvShape{N: 64, In: 4096, H: 1, W: 300, K: 1, S: 2}, 1, true, 2, 65535, "at most 65535 rows", 4096},
		{tensor.ConvShape{N: 2, In: 3, H: 13, W: 12, K: 7, S: 2, P: 3}, 4, true, 1, 6, "7 x 7 at stride 2: a row a plane", 0},
		{tensor.ConvShape{N: 2, In: 3, H: 11, W: 10, K: 5, S: 3, P: 2}, 2, true, 1, 6, "5 x 5 at stride 3", 0},
		{tensor.ConvShape{N: 2, In: 3, H: 20, W: 20, K: 9, S: 2, P: 4}, 0, false, 0, 0, "9 x 9 at stride 2: 5 taps a side", 0},
		{tensor.ConvShape{N: 0, In: 3, H: 8, W: 8, K: 3, S: 2, P: 1}, 0, false, 0, 0, "no image", 0},
		{tensor.ConvShape{N: 2, In: 3, H: 0, W: 8, K: 3, S: 2, P: 1}, 0, false, 0, 0, "no row", 0},
	} {
		taps, cfg, ok := col2imTaps(tc.s, cmp.Or(tc.sms, 132))
		if taps != tc.taps || ok != tc.ok || ok && (cfg.Grid.X != tc.gx || cfg.Grid.Y != tc.gy || cfg.Block.X != 256) {
			t.Errorf("%s: col2imTaps = %d, %v, %+v; want %d, %v, %d x %d blocks of 256", tc.describe, taps, ok, cfg, tc.taps, tc.ok, tc.gx, tc.gy)
		}
	}
}

// TestConvCol2imTapsEmulated runs conv_col2im_taps<T>_f32 and conv_col2im_f32
// on the same dcol on the CPU emulator, on random geometries (kernels 1-8,
// strides 2-4, paddings up to K-1, maps from 1 x 1, both layouts, with and
// without accumulating, planes beyond a narrowed grid's rows), and
// requires equal bits. It skips without g++ or under -short.
func TestConvCol2imTapsEmulated(t *testing.T) {
	be, err := newBackend(cudatest.NewEmulator(t), 64)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 11))
	ran := 0
	for i := 0; ran < 40; i++ {
		k, st := 1+r.IntN(8), 2+r.IntN(3)
		s := tensor.ConvShape{N: 1 + r.IntN(3), In: 1 + r.IntN(5), Out: 1, H: 1 + r.IntN(13), W: 1 + r.IntN(13),
			K: k, S: st, P: r.IntN(k), ChannelMajor: r.IntN(2) == 0}
		if s.OutH() < 1 || s.OutW() < 1 {
			continue
		}
		taps, cfg, ok := col2imTaps(s, 132)
		if !ok {
			continue
		}
		ran++
		acc := i%3 == 0
		if i%4 == 1 {
			cfg.Grid.Y = max(cfg.Grid.Y/3, 1) // rows of blocks that walk several planes
		}
		t.Run(fmt.Sprintf("%d/%+v/acc=%v", i, s, acc), func(t *testing.T) {
			a := convArgs("test", s)
			nx, ncol := s.N*s.In*s.H*s.W, s.In*s.K*s.K*s.N*s.OutH()*s.OutW()
			ptr := func(o tensor.Operand, n int) driver.DevicePtr { return be.convPtr("test", "operand", o, n) }
			dcol, init := devOperand(be, randSlice(r, ncol)), randSlice(r, nx)
			var got [2][]float32
			for v := range got {
				dx := devOperand(be, init)
				var err error
				if v == 0 {
					err = kc.ConvCol2imF32(be.g, be.grid(int64(nx)), ptr(dx, nx), ptr(dcol, ncol), convFlag(acc),
						a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
				} else {
					err = col2imTapsKernels[taps](be.g, cfg, ptr(dx, nx), ptr(dcol, ncol), convFlag(acc),
						a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
				}
				if err != nil {
					t.Fatal(err)
				}
				got[v] = fromDev(be, dx)
			}
			bitsEqual(t, "conv_col2im_taps<T>_f32 vs conv_col2im_f32", got[1], got[0])
		})
	}
}

// BenchmarkCol2im times conv_col2im_taps<T>_f32 beside conv_col2im_f32, its
// peer, on the gathers of ResNet-50's strided input gradients at batch
// 256 (the 3 x 3 128-channel layer at stride 2 from 32 x 32, and the 1 x 1
// 256 -> 512 shortcut) and reports GB/s (dcol read once, dx written once;
// device time from events). GPU only.
func BenchmarkCol2im(b *testing.B) {
	d := needGPU(b)
	be, err := newBackend(d, 256)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    tensor.ConvShape
	}{
		{"Stride2", tensor.ConvShape{N: 256, In: 128, Out: 128, H: 32, W: 32, K: 3, S: 2, P: 1, ChannelMajor: true}},
		{"Down1x1", tensor.ConvShape{N: 256, In: 256, Out: 512, H: 32, W: 32, K: 1, S: 2, P: 0, ChannelMajor: true}},
	} {
		s, a := c.s, convArgs("bench", c.s)
		nx, ncol := s.N*s.In*s.H*s.W, s.In*s.K*s.K*s.N*s.OutH()*s.OutW()
		dx, dcol := be.Alloc(nx), be.Alloc(ncol)
		dxp, dcolp := be.convPtr("bench", "dx", tensor.Operand{Buf: dx, Shape: []int{nx}, Strides: []int{1}}, nx),
			be.convPtr("bench", "dcol", tensor.Operand{Buf: dcol, Shape: []int{ncol}, Strides: []int{1}}, ncol)
		taps, cfg, _ := col2imTaps(s, be.g.Multiprocessors())
		type variant struct {
			name string
			run  func() error
		}
		vs := []variant{{"taps", func() error {
			return col2imTapsKernels[taps](be.g, cfg, dxp, dcolp, 0, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
		}}}
		for _, per := range []int{16, 256, 1 << 20} { // other blocks a multiprocessor (col2imBlocksPerSM); 1<<20: a row a plane
			c := cfg
			c.Grid.Y = max(min(s.N*s.In, be.g.Multiprocessors()*per/c.Grid.X, 65535), 1)
			vs = append(vs, variant{fmt.Sprintf("taps/y%d", c.Grid.Y), func() error {
				return col2imTapsKernels[taps](be.g, c, dxp, dcolp, 0, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
			}})
		}
		for _, k := range append(vs, []variant{
			{"generic", func() error {
				return kc.ConvCol2imF32(be.g, be.grid(int64(nx)), dxp, dcolp, 0, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
			}},
		}...) {
			b.Run(c.name+"/"+k.name, func(b *testing.B) {
				run := func() { be.queued("bench", k.run()) }
				run()
				if err := be.Synchronize(); err != nil {
					b.Fatal(err)
				}
				per := deviceLoop(b, d, run)
				b.ReportMetric(4*float64(nx+ncol)/per.Seconds()/1e9, "GB/s")
				b.ReportMetric(per.Seconds()*1e6, "us")
			})
		}
	}
}

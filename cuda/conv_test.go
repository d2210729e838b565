package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/duel-ssl/duel/cuda/driver"
	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/kernels/conv"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// convCase is a named convolution geometry of the tests.
type convCase struct {
	name string
	s    tensor.ConvShape
}

// convCases are the geometries the CUDA convolution is checked on: odd
// sizes, strides 1 and 2, padding 0, 1 and 3, kernels 1, 3 and 7, one
// image, one channel, an empty batch, a kernel larger than the image,
// products of several 64 x 64 tiles, products of more than 64 rows
// (the wide 128 x 128 kernels: O for the forward pass and the weight
// gradient, C for the input gradient) and weight gradients split into
// several chunks.
var convCases = []convCase{
	{"1x1", tensor.ConvShape{N: 2, In: 3, Out: 4, H: 5, W: 5, K: 1, S: 1, P: 0}},
	{"3x3Odd", tensor.ConvShape{N: 3, In: 5, Out: 7, H: 9, W: 11, K: 3, S: 1, P: 1}},
	{"3x3Stride2", tensor.ConvShape{N: 2, In: 4, Out: 6, H: 9, W: 7, K: 3, S: 2, P: 1}},
	{"3x3NoPad", tensor.ConvShape{N: 2, In: 3, Out: 5, H: 8, W: 7, K: 3, S: 1, P: 0}},
	{"7x7Stem", tensor.ConvShape{N: 2, In: 3, Out: 5, H: 13, W: 12, K: 7, S: 2, P: 3}},
	{"1x1Stride2", tensor.ConvShape{N: 2, In: 4, Out: 3, H: 6, W: 7, K: 1, S: 2, P: 0}},
	{"OneImage", tensor.ConvShape{N: 1, In: 2, Out: 3, H: 4, W: 5, K: 3, S: 1, P: 1}},
	{"OneChannel", tensor.ConvShape{N: 3, In: 1, Out: 1, H: 5, W: 6, K: 3, S: 1, P: 0}},
	{"EmptyBatch", tensor.ConvShape{N: 0, In: 3, Out: 4, H: 5, W: 5, K: 3, S: 1, P: 1}},
	{"KernelOverImage", tensor.ConvShape{N: 2, In: 2, Out: 3, H: 3, W: 4, K: 7, S: 1, P: 3}},
	{"Tiles", tensor.ConvShape{N: 2, In: 9, Out: 70, H: 7, W: 6, K: 3, S: 1, P: 1}},
	{"SplitWeightGrad", tensor.ConvShape{N: 4, In: 3, Out: 5, H: 16, W: 15, K: 3, S: 1, P: 1}},
	{"WideStride2", tensor.ConvShape{N: 2, In: 67, Out: 131, H: 5, W: 6, K: 3, S: 2, P: 1}},
	{"Wide1x1", tensor.ConvShape{N: 3, In: 130, Out: 129, H: 4, W: 5, K: 1, S: 1, P: 0}},
	{"WideSplitWeightGrad", tensor.ConvShape{N: 4, In: 5, Out: 72, H: 16, W: 15, K: 3, S: 1, P: 1}},
}

// hostOperand returns a contiguous 1-d operand of data on the host.
func hostOperand(data []float32) tensor.Operand {
	return tensor.Operand{Buf: tensor.Buffer{Host: data}, Shape: []int{len(data)}, Strides: []int{1}}
}

// devOperand copies data to be at an offset of 3 elements and returns the
// contiguous operand of it.
func devOperand(be *Backend, data []float32) tensor.Operand {
	buf := be.Alloc(len(data) + 3)
	be.CopyIn(buf, 3, data)
	return tensor.Operand{Buf: buf, Offset: 3, Shape: []int{len(data)}, Strides: []int{1}}
}

// fromDev copies operand o of be back to the host.
func fromDev(be *Backend, o tensor.Operand) []float32 {
	out := make([]float32, o.Shape[0])
	be.CopyOut(out, o.Buf, o.Offset)
	return out
}

func randSlice(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

// convClose checks got against the CPU's want for a pass whose sums have
// terms terms: the CUDA kernels sum in another order (float32 FMA tiles,
// or chunks), so the results agree within float32 summation error, not
// bit for bit. It returns the largest difference.
func convClose(t *testing.T, what string, got, want []float32, terms int, slack float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	worst, bad := 0.0, 0
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		worst = max(worst, d)
		if !(d <= slack*(1e-5*math.Abs(float64(want[i]))+1e-6*float64(terms+1))) {
			if bad++; bad <= 5 {
				t.Errorf("%s: element %d = %g, want %g", what, i, got[i], want[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d mismatches in all", what, bad)
	}
	return worst
}

// testConv runs every pass of every case of convCases, in both input
// layouts, with and without accumulation and bias, on be and on the CPU
// backend, and compares them.
func testConv(t *testing.T, be *Backend) { testConvRounded(t, be, nil, 1) }

// testConvRounded is testConv with the factors (x, w and dy) rounded by
// round first, when not nil: the products of such factors are exact in
// float32, so a tensor-core pass that rounds its factors the same way
// agrees with the CPU's on them within float32 summation error (times
// slack: a GPU's mma accumulation is not IEEE's).
func testConvRounded(t *testing.T, be *Backend, round func(float32) float32, slack float64) {
	cpuB, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpuB.(tensor.ConvBackend)
	r := rand.New(rand.NewPCG(12, 34))
	for _, tc := range convCases {
		for _, cm := range []bool{false, true} {
			for _, acc := range []bool{false, true} {
				bias := acc != cm
				s := tc.s
				s.ChannelMajor = cm
				t.Run(fmt.Sprintf("%s/cm=%v/acc=%v", tc.name, cm, acc), func(t *testing.T) {
					checkConv(t, be, cpu, s, acc, bias, r, round, slack)
				})
				if s.S > 1 && cm == acc { // the strided input gradient's other path: the direct kernels
					t.Run(fmt.Sprintf("%s/checked/cm=%v/acc=%v", tc.name, cm, acc), func(t *testing.T) {
						be.checkedStrided = true
						defer func() { be.checkedStrided = false }()
						checkConv(t, be, cpu, s, acc, bias, r, round, slack)
					})
				}
			}
		}
	}
}

// checkConv compares the four passes of s on be with cpu's.
// The factors x, w and dy are rounded by round when it is not nil, and
// the tolerance is convClose's times slack.
func checkConv(t *testing.T, be *Backend, cpu tensor.ConvBackend, s tensor.ConvShape, acc, bias bool, r *rand.Rand, round func(float32) float32, slack float64) {
	t.Helper()
	oh, ow := s.OutH(), s.OutW()
	nx, ny, nw := s.N*s.In*s.H*s.W, s.Out*s.N*oh*ow, s.Out*s.In*s.K*s.K
	x, w, b, dy := randSlice(r, nx), randSlice(r, nw), randSlice(r, s.Out), randSlice(r, ny)
	if round != nil {
		for _, v := range [][]float32{x, w, dy} {
			for i := range v {
				v[i] = round(v[i])
			}
		}
	}
	dx0, dw0, db0 := randSlice(r, nx), randSlice(r, nw), randSlice(r, s.Out)
	al := cpu.ConvAlgos(s, conv.Auto)
	gal := be.ConvAlgos(s, conv.Auto)

	// Forward.
	wantY := make([]float32, ny)
	hb, db := tensor.Operand{}, tensor.Operand{}
	if bias {
		hb, db = hostOperand(b), devOperand(be, b)
	}
	cpu.ConvForward(hostOperand(wantY), hostOperand(x), hostOperand(w), hb, s, al, false)
	gx, gw := devOperand(be, x), devOperand(be, w)
	gy := devOperand(be, make([]float32, ny))
	if saved := be.ConvForward(gy, gx, gw, db, s, gal, true); saved != nil {
		t.Errorf("ConvForward kept %v, want nil", saved)
	}
	e1 := convClose(t, "forward", fromDev(be, gy), wantY, s.In*s.K*s.K, slack)

	// Input gradient.
	wantDx := make([]float32, nx)
	if acc {
		copy(wantDx, dx0)
	}
	cpu.ConvInputGrad(hostOperand(wantDx), hostOperand(dy), hostOperand(w), s, al, nil, acc)
	gdy := devOperand(be, dy)
	gdx := devOperand(be, dx0)
	be.ConvInputGrad(gdx, gdy, gw, s, gal, nil, acc)
	e2 := convClose(t, "input grad", fromDev(be, gdx), wantDx, s.Out*s.K*s.K, slack)

	// Weight gradient.
	wantDw := make([]float32, nw)
	if acc {
		copy(wantDw, dw0)
	}
	cpu.ConvWeightGrad(hostOperand(wantDw), hostOperand(dy), hostOperand(x), s, al, acc)
	gdw := devOperand(be, dw0)
	be.ConvWeightGrad(gdw, gdy, gx, s, gal, acc)
	e3 := convClose(t, "weight grad", fromDev(be, gdw), wantDw, s.N*oh*ow, slack)

	// Bias gradient (always adds).
	wantDb := append([]float32(nil), db0...)
	cpu.ConvBiasGrad(hostOperand(wantDb), hostOperand(dy), s)
	gdb := devOperand(be, db0)
	be.ConvBiasGrad(gdb, gdy, s)
	e4 := convClose(t, "bias grad", fromDev(be, gdb), wantDb, s.N*oh*ow, slack)
	if err := be.Synchronize(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v: largest differences from the CPU: forward %.2g, input grad %.2g, weight grad %.2g, bias grad %.2g", s, e1, e2, e3, e4)
}

// TestConvAlgos checks that the backend reports the one algorithm it runs
// whatever is asked.
func TestConvAlgos(t *testing.T) {
	be, err := newBackend(cudatest.NewHost(), 64)
	if err != nil {
		t.Fatal(err)
	}
	s := tensor.ConvShape{N: 2, In: 3, Out: 4, H: 8, W: 8, K: 3, S: 1, P: 1}
	for _, req := range []tensor.ConvAlgo{conv.Auto, conv.Im2col, conv.Winograd, conv.Direct} {
		want := tensor.ConvAlgos{Forward: conv.Im2col, WeightGrad: conv.Im2col, InputGrad: conv.Im2col}
		if got := be.ConvAlgos(s, req); got != want {
			t.Errorf("ConvAlgos(%v) = %+v, want %+v", req, got, want)
		}
	}
}

// TestConvSplits checks the weight gradient's chunking: the chunks cover
// the reduction, each a multiple of 16 long, none empty.
func TestConvSplits(t *testing.T) {
	for _, tc := range []struct{ p, tiles, sms int }{
		{0, 1, 2}, {1, 1, 2}, {255, 1, 132}, {1024, 1, 2}, {262144, 9, 132}, {262144, 1000, 132}, {100000, 1, 132},
	} {
		splits, chunk := convSplits(tc.p, tc.tiles, tc.sms)
		if splits < 1 || chunk%16 != 0 || splits*chunk < tc.p || (splits > 1 && (splits-1)*chunk >= tc.p) {
			t.Errorf("convSplits(%d, %d, %d) = %d, %d", tc.p, tc.tiles, tc.sms, splits, chunk)
		}
	}
}

// TestConvOnHost runs the passes on the backend's Go code with Go versions
// of conv.cu's kernels (cudatest.Host), against the CPU backend: the
// launch parameters, offsets and chunking, without a GPU or g++.
func TestConvOnHost(t *testing.T) {
	h := cudatest.NewHost()
	registerConvKernels(h)
	be, err := newBackend(h, 64)
	if err != nil {
		t.Fatal(err)
	}
	testConv(t, be)
}

// TestConvEmulated runs the passes with conv.cu itself on the CPU emulator
// (cudatest.Emulator) against the CPU backend. It skips without g++ or
// under -short.
func TestConvEmulated(t *testing.T) {
	be, err := newBackend(cudatest.NewEmulator(t), 64)
	if err != nil {
		t.Fatal(err)
	}
	testConv(t, be)
}

// TestConvGPU runs the passes on a real device against the CPU backend,
// plus a ResNet-18 CIFAR layer of 8 images. It skips without a usable GPU;
// it runs under -short (a few seconds).
func TestConvGPU(t *testing.T) {
	d := needGPU(t)
	be, err := newBackend(d, 256)
	if err != nil {
		t.Fatal(err)
	}
	testConv(t, be)
	cpuB, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if sanitizing() {
		return // the ResNet layers below: too slow under compute-sanitizer
	}
	r := rand.New(rand.NewPCG(7, 7))
	for _, s := range []tensor.ConvShape{
		{N: 8, In: 64, Out: 64, H: 32, W: 32, K: 3, S: 1, P: 1},
		{N: 8, In: 64, Out: 128, H: 32, W: 32, K: 3, S: 2, P: 1, ChannelMajor: true},
		{N: 8, In: 3, Out: 64, H: 32, W: 32, K: 7, S: 2, P: 3},
	} {
		t.Run(fmt.Sprintf("ResNet%dx%d", s.In, s.Out), func(t *testing.T) {
			checkConv(t, be, cpuB.(tensor.ConvBackend), s, false, true, r, nil, 1)
		})
	}
}

// TestConvWideTiles: the wide kernels serve exactly the products of more
// than 64 rows, and their grid covers the product with 128 x 128 tiles.
func TestConvWideTiles(t *testing.T) {
	for _, tc := range []struct {
		m, n   int
		wide   bool
		gx, gy int
	}{
		{1, 1, false, 1, 1}, {64, 64, false, 1, 1}, {64, 65, false, 2, 1},
		{65, 1, true, 1, 1}, {128, 129, true, 2, 1}, {129, 256, true, 2, 2}, {2048, 4096, true, 32, 16},
	} {
		if got := convWide(tc.m); got != tc.wide {
			t.Errorf("convWide(%d) = %v, want %v", tc.m, got, tc.wide)
		}
		g := convGrid("test", tc.m, tc.n, 1).Grid
		if g.X != tc.gx || g.Y != tc.gy {
			t.Errorf("convGrid(%d, %d) = %d x %d blocks, want %d x %d", tc.m, tc.n, g.X, g.Y, tc.gx, tc.gy)
		}
	}
}

// TestConvWideEmulated runs the wide kernels and the 64 x 64 kernels of
// conv.cu on the same products on the CPU emulator (the weight gradient
// unsplit, both in one chunk) and requires equal bits: both sum every
// output element's terms in increasing order, one FMA at a time. It skips
// without g++ or under -short.
func TestConvWideEmulated(t *testing.T) {
	be, err := newBackend(cudatest.NewEmulator(t), 64)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	cfg := func(tile, m, n int) kc.Config {
		return kc.Config{Grid: driver.Dim3{X: max((n+tile-1)/tile, 1), Y: max((m+tile-1)/tile, 1), Z: 1}, Block: driver.Dim3{X: 256, Y: 1, Z: 1}}
	}
	for _, s := range []tensor.ConvShape{
		{N: 2, In: 67, Out: 131, H: 5, W: 6, K: 3, S: 2, P: 1},
		{N: 3, In: 130, Out: 129, H: 4, W: 5, K: 1, S: 1, P: 0, ChannelMajor: true},
		{N: 1, In: 3, Out: 200, H: 7, W: 7, K: 7, S: 2, P: 3},
	} {
		t.Run(fmt.Sprintf("%dx%dk%ds%d", s.In, s.Out, s.K, s.S), func(t *testing.T) {
			oh, ow := s.OutH(), s.OutW()
			nx, ny, nw := s.N*s.In*s.H*s.W, s.Out*s.N*oh*ow, s.Out*s.In*s.K*s.K
			a := convArgs("test", s)
			ptr := func(o tensor.Operand, n int) driver.DevicePtr { return be.convPtr("test", "operand", o, n) }
			x, w, b, dy := devOperand(be, randSlice(r, nx)), devOperand(be, randSlice(r, nw)), devOperand(be, randSlice(r, s.Out)), devOperand(be, randSlice(r, ny))
			type pass struct {
				name   string
				n      int
				launch func(wide bool, out driver.DevicePtr) error
			}
			cols, p, rr := s.N*oh*ow, s.N*oh*ow, s.In*s.K*s.K
			for _, ps := range []pass{
				{"forward", ny, func(wide bool, out driver.DevicePtr) error {
					f, tile := kc.ConvFwdF32, convTile
					if wide {
						f, tile = kc.ConvFwdWideF32, convWideTile
					}
					return f(be.g, cfg(tile, s.Out, cols), out, ptr(x, nx), ptr(w, nw), ptr(b, s.Out), 1, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
				}},
				{"input grad", nx, func(wide bool, out driver.DevicePtr) error {
					f, tile := kc.ConvDgradF32, convTile
					if wide {
						f, tile = kc.ConvDgradWideF32, convWideTile
					}
					return f(be.g, cfg(tile, s.In, s.N*s.H*s.W), out, ptr(dy, ny), ptr(w, nw), 0, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
				}},
				{"weight grad", nw, func(wide bool, out driver.DevicePtr) error {
					f, tile := kc.ConvWgradF32, convTile
					if wide {
						f, tile = kc.ConvWgradWideF32, convWideTile
					}
					return f(be.g, cfg(tile, s.Out, rr), out, ptr(dy, ny), ptr(x, nx), 0, int32(p), a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
				}},
			} {
				var got [2][]float32
				for i, wide := range []bool{false, true} {
					out := devOperand(be, make([]float32, ps.n))
					if err := ps.launch(wide, ptr(out, ps.n)); err != nil {
						t.Fatalf("%s (wide %v): %v", ps.name, wide, err)
					}
					got[i] = fromDev(be, out)
				}
				bitsEqual(t, ps.name+": wide kernel vs 64 x 64 kernel", got[1], got[0])
			}
		})
	}
}

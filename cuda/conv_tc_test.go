package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

// convTCCases add to convCases the shapes that exercise conv_tc.cu's own
// paths: several 128 x 256 and 64 x 256 tiles, reductions of several
// panels of 32 with a partial last one, the dense 1 x 1 paths (stride 1,
// no padding) with rows on 16 bytes and off them, weight gradients split
// into several chunks of whole panels, and transposed weight gradients
// (conv_wgradt_tc*: Rows130Cols300, Dense1x1Aligned, and convCases'
// WideStride2 and WideSplitWeightGrad; TestConvTCTransposed).
var convTCCases = []convCase{
	{"Rows130Cols300", tensor.ConvShape{N: 3, In: 7, Out: 130, H: 10, W: 10, K: 3, S: 1, P: 1}},
	{"Rows64Panels", tensor.ConvShape{N: 2, In: 9, Out: 64, H: 9, W: 8, K: 3, S: 2, P: 1}},
	{"Dense1x1Aligned", tensor.ConvShape{N: 2, In: 40, Out: 72, H: 8, W: 8, K: 1, S: 1, P: 0}},
	{"Dense1x1Odd", tensor.ConvShape{N: 3, In: 37, Out: 33, H: 5, W: 3, K: 1, S: 1, P: 0}},
	{"SplitChunks", tensor.ConvShape{N: 8, In: 2, Out: 3, H: 16, W: 16, K: 3, S: 1, P: 1}},
	{"Stride3Pad2", tensor.ConvShape{N: 2, In: 3, Out: 5, H: 11, W: 10, K: 5, S: 3, P: 2}},
	{"5x5Pad1", tensor.ConvShape{N: 2, In: 3, Out: 4, H: 7, W: 9, K: 5, S: 1, P: 1}},
	{"2x2Even", tensor.ConvShape{N: 2, In: 3, Out: 5, H: 6, W: 5, K: 2, S: 1, P: 1}},
}

// tcKinds are the tensor-core kernel versions the convolution tests run
// in precision p: TCAuto (in TF32 the *_tf32rr kernels), and in TF32 also
// TCV2 (the kernels that round each panel in shared memory), TCV4 (the
// *_tf32rl kernels) and TCWG (conv_wg.cu's wgmma kernels on compute
// capability 9.0 and the emulator, elsewhere TCAuto's).
func tcKinds(p Precision) []TCKernel {
	if p == TF32 {
		return []TCKernel{TCAuto, TCV2, TCV4, TCWG}
	}
	return []TCKernel{TCAuto}
}

// tcPrecisions are the tensor-core precisions and the rounding of their
// factors (the tests' independent transcription, gemm_precision_test.go).
var tcPrecisions = []struct {
	prec  Precision
	round func(float32) float32
}{{TF32, roundTF32}, {BF16, roundBF16}}

// TestConvTCEmulated runs the passes in precisions tf32 and bf16 (so with
// conv_tc.cu's kernels) on the CPU emulator against the CPU backend, on
// factors rounded to TF32 or BF16 beforehand (whose products are exact
// in float32: the results agree within float32 summation error), on
// convCases and convTCCases in both input layouts, with and without
// accumulation and bias; TF32 under TCAuto (the *_tf32rr kernels,
// rounding in registers), TCV2 (rounding each panel in shared memory),
// TCV4 (the *_tf32rl kernels) and TCWG (conv_wg.cu's wgmma kernels; the
// transposed weight gradient stays conv_tc.cu's); strided cases run the
// input gradient by phases, and again by the checked gather and by dcol
// and its gather. It skips without g++ or under -short.
func TestConvTCEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	cpuB, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpuB.(tensor.ConvBackend)
	for _, p := range tcPrecisions {
		for _, tck := range tcKinds(p.prec) {
			t.Run(p.prec.String()+"/"+tck.String(), func(t *testing.T) {
				be, err := newBackend(e, 64)
				if err != nil {
					t.Fatal(err)
				}
				if got := be.SetPrecision(p.prec); got != p.prec {
					t.Fatalf("SetPrecision(%v) = %v on the emulator", p.prec, got)
				}
				be.SetTCKernel(tck)
				for _, m := range []int{1, 64, 65, 300} {
					for _, pass := range []string{"fwd", "dgrad", "wgrad"} {
						k, ok := be.convTCFor(pass, m)
						tile := map[bool]string{true: "64", false: ""}[m <= 64]
						suffix := ""
						if p.prec == TF32 {
							suffix = map[TCKernel]string{TCAuto: "rr", TCV4: "rl"}[tck]
						}
						want := fmt.Sprintf("conv_%s_tc%s_%s%s", pass, tile, p.prec, suffix)
						if tck == TCWG {
							want = fmt.Sprintf("conv_%s_wg%s_tf32", pass, tile)
						}
						if !ok || k.name != want {
							t.Fatalf("convTCFor(%s, %d) = %q, %v; want %q", pass, m, k.name, ok, want)
						}
					}
				}
				r := rand.New(rand.NewPCG(21, uint64(p.prec)))
				for i, tc := range append(convCases[:len(convCases):len(convCases)], convTCCases...) {
					s := tc.s
					s.ChannelMajor = (i+int(p.prec))%2 == 0 // each case in one layout per precision, the other in the other
					t.Run(fmt.Sprintf("%s/cm=%v", tc.name, s.ChannelMajor), func(t *testing.T) {
						checkConv(t, be, cpu, s, s.ChannelMajor, !s.ChannelMajor, r, p.round, 1)
					})
					if s.S > 1 { // the strided input gradient's other paths: the checked gather, the phases (dense and direct)
						s.ChannelMajor = !s.ChannelMajor
						t.Run(fmt.Sprintf("%s/checked/cm=%v", tc.name, s.ChannelMajor), func(t *testing.T) {
							be.checkedStrided = true
							defer func() { be.checkedStrided = false }()
							checkConv(t, be, cpu, s, s.ChannelMajor, !s.ChannelMajor, r, p.round, 1)
						})
						t.Run(fmt.Sprintf("%s/phases/cm=%v", tc.name, s.ChannelMajor), func(t *testing.T) {
							be.phasesStrided = true
							defer func() { be.phasesStrided = false }()
							checkConv(t, be, cpu, s, s.ChannelMajor, !s.ChannelMajor, r, p.round, 1)
						})
						t.Run(fmt.Sprintf("%s/phasesdirect/cm=%v/acc=%v", tc.name, s.ChannelMajor, !s.ChannelMajor), func(t *testing.T) {
							be.phasesStrided, be.phasesDirect = true, true
							defer func() { be.phasesStrided, be.phasesDirect = false, false }()
							checkConv(t, be, cpu, s, !s.ChannelMajor, s.ChannelMajor, r, p.round, 1)
						})
					}
				}
			})
		}
	}
}

// TestConvTCGPU runs the passes in tf32 and bf16 on a real device of
// compute capability 8.0 or later (conv_tc.cu's kernels where it gives
// them their shared memory) against the CPU backend on pre-rounded
// factors, on convCases, convTCCases and three ResNet layers of 32
// images (convCases and the ResNet layers left out where sanitizing),
// with 8 times the emulator's tolerance (the hardware's mma accumulation
// is not IEEE's); TF32 under TCAuto (the *_tf32rr kernels), TCV2, TCV4
// (*_tf32rl) and TCWG (conv_wg.cu's kernels on compute capability 9.0). GPU only
// (and TestConvTCFakeDriver's children).
func TestConvTCGPU(t *testing.T) {
	d := needGPU(t)
	cpuB, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tcPrecisions {
		for _, tck := range tcKinds(p.prec) {
			t.Run(p.prec.String()+"/"+tck.String(), func(t *testing.T) {
				be, err := newBackend(d, 256)
				if err != nil {
					t.Fatal(err)
				}
				if got := be.SetPrecision(p.prec); got != p.prec {
					t.Skipf("%v: compute capability %d: %v runs in %v", d, d.Capability(), p.prec, got)
				}
				be.SetTCKernel(tck)
				for _, pass := range []string{"fwd", "dgrad", "wgrad"} {
					k, ok := be.convTCFor(pass, 128)
					t.Logf("%s: %q (tensor cores: %v)", pass, k.name, ok)
				}
				if !sanitizing() {
					testConvRounded(t, be, p.round, 8)
				}
				r := rand.New(rand.NewPCG(22, uint64(p.prec)))
				cases := append(convTCCases[:len(convTCCases):len(convTCCases)], []convCase{
					{"ResNet64", tensor.ConvShape{N: 32, In: 64, Out: 64, H: 32, W: 32, K: 3, S: 1, P: 1, ChannelMajor: true}},
					{"ResNet1x1", tensor.ConvShape{N: 32, In: 64, Out: 256, H: 32, W: 32, K: 1, S: 1, P: 0, ChannelMajor: true}},
					{"ResNetDown", tensor.ConvShape{N: 32, In: 128, Out: 256, H: 16, W: 16, K: 3, S: 2, P: 1, ChannelMajor: true}},
				}...)
				if sanitizing() {
					cases = convTCCases
				}
				for _, tc := range cases {
					for _, cm := range []bool{false, true} {
						s := tc.s
						s.ChannelMajor = cm
						t.Run(fmt.Sprintf("%s/cm=%v", tc.name, cm), func(t *testing.T) {
							checkConv(t, be, cpuB.(tensor.ConvBackend), s, cm, !cm, r, p.round, 8)
						})
					}
				}
			})
		}
	}
}

// TestConvTCFakeDriver runs TestConvTCGPU's small shapes through the
// whole driver path without a GPU (the fake libcuda: module load,
// cuFuncSetAttribute's shared-memory opt-in, launches with dynamic shared
// memory beyond 48 KiB): tf32 on the default fake A100 (sm_80, 163 KiB:
// conv_*_tc_tf32 fit), bf16 on a fake H100 (sm_90, 227 KiB: the 204 KiB
// of conv_*_tc_bf16 fit), and tf32 on the fake H100 (TCAuto and TCWG:
// the 193 KiB of conv_*_wg_tf32, sm_90a PTX). It skips without g++ or under -short.
func TestConvTCFakeDriver(t *testing.T) {
	lib := cudatest.FakeDriver(t)
	for _, tc := range []struct{ prec, kinds, cc, want string }{
		{"tf32", "/^(auto|v2)$", "80", "fwd: \"conv_fwd_tc_tf32\" (tensor cores: true)"},
		{"bf16", "", "90", "fwd: \"conv_fwd_tc_bf16\" (tensor cores: true)"},
		{"tf32", "/^(auto|wg)$", "90", "fwd: \"conv_fwd_wg_tf32\" (tensor cores: true)"},
	} {
		t.Run(tc.prec+"/sm"+tc.cc, func(t *testing.T) {
			t.Parallel() // independent child processes, as many at once as -parallel allows
			out := runFake(t, lib, "^TestConvTCGPU$/^"+tc.prec+"$"+tc.kinds, "DUEL_GPU_SMALL=1", "DUEL_FAKE_CUDA_CC="+tc.cc)
			for _, w := range []string{"--- PASS: TestConvTCGPU/" + tc.prec, tc.want, "Rows130Cols300/cm=true"} {
				if !strings.Contains(out, w) || strings.Contains(out, "--- SKIP") {
					t.Errorf("%s at sm_%s with the fake driver: output lacks %q or skips:\n%s", tc.prec, tc.cc, w, out)
				}
			}
		})
	}
}

// TestConvTCChoice: fp32 keeps conv.cu's kernels; tf32 and bf16 pick the
// tile by the product's rows; a device whose opt-in limit is below a
// kernel's shared memory gets the next candidate (bf16 on sm_80's 163 KiB:
// TF32 at 128 rows, since BF16 needs 204 KiB, and 170 KiB at 64 rows) or
// conv.cu's; TCAuto on compute capability 9.0 takes conv_wg.cu's, or
// the rr kernels where the device refuses their shared memory.
func TestConvTCChoice(t *testing.T) {
	for _, tc := range []struct {
		prec  Precision
		limit int // the device's opt-in limit; 0: no SharedMemoryOptIn
		m     int
		want  string // "" for conv.cu's kernels
		cc    int    // the device's compute capability (0: unknown, the emulator)
	}{
		{TF32, 0, 300, "conv_fwd_wg_tf32", 90},
		{TF32, 0, 64, "conv_fwd_wg64_tf32", 90},
		{TF32, 166912, 300, "conv_fwd_tc_tf32rr", 90},
		{TF32, 0, 300, "conv_fwd_tc_tf32rr", 80},
		{BF16, 0, 300, "conv_fwd_tc_bf16", 90},
		{FP32, 0, 300, "", 0},
		{TF32, 0, 64, "conv_fwd_tc64_tf32rr", 0},
		{TF32, 0, 65, "conv_fwd_tc_tf32rr", 0},
		{BF16, 0, 200, "conv_fwd_tc_bf16", 0},
		{BF16, 232448, 200, "conv_fwd_tc_bf16", 0},
		{BF16, 232448, 10, "conv_fwd_tc64_bf16", 0},
		{BF16, 166912, 200, "conv_fwd_tc_tf32", 0},
		{BF16, 166912, 10, "conv_fwd_tc64_tf32", 0},
		{TF32, 166912, 200, "conv_fwd_tc_tf32rr", 0},
		{TF32, 101376, 200, "", 0},
		{TF32, 101376, 64, "", 0},
	} {
		t.Run(fmt.Sprintf("%v/%d/%d/sm%d", tc.prec, tc.limit, tc.m, tc.cc), func(t *testing.T) {
			be := &Backend{convPrec: tc.prec, cc: tc.cc}
			if tc.limit > 0 {
				be.g = &optInHost{max: tc.limit}
			}
			k, ok := be.convTCFor("fwd", tc.m)
			if got := map[bool]string{true: k.name, false: ""}[ok]; got != tc.want {
				t.Errorf("convTCFor = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConvTCTransposed: the weight gradient takes the transposed product
// exactly where its tiles cover less area (ResNet-50's 1 x 1 kernels on
// 64 and 128 channels), never on a tie.
func TestConvTCTransposed(t *testing.T) {
	be := &Backend{convPrec: TF32}
	for _, tc := range []struct {
		o, r int
		want string // "" for conv_wgrad_tc*
	}{
		{256, 64, "conv_wgradt_tc64_tf32rr"}, // 1 x 1, 64 -> 256: 64 x 256 against 256 x 256
		{512, 128, "conv_wgradt_tc_tf32rr"},  // 1 x 1, 128 -> 512
		{64, 576, ""},                        // 3 x 3, 64 -> 64
		{128, 1152, ""},                      // 3 x 3, 128 -> 128
		{64, 256, ""},                        // 1 x 1, 256 -> 64
		{7, 45, ""},                          // a tie: 64 x 256 both ways
		{131, 603, "conv_wgradt_tc_tf32rr"},  // 640 x 256 against 256 x 768
		{72, 45, "conv_wgradt_tc64_tf32rr"},
	} {
		k, _ := be.convTCFor("wgrad", tc.o)
		got := ""
		if tk, ok := be.convTCTransposed(k, tc.o, tc.r); ok {
			got = tk.name
		}
		if got != tc.want {
			t.Errorf("O %d, C*K*K %d: transposed %q, want %q", tc.o, tc.r, got, tc.want)
		}
	}
}

// TestConvTCSharedConstants checks the launchers' shared memory against
// conv_tc.cuh's CTC_SHARED_* (which the kernel checks against its panel
// layout with static_assert).
func TestConvTCSharedConstants(t *testing.T) {
	src := kernelSource(t, "conv_tc.cuh")
	for name, want := range map[string]int{
		"CTC_SHARED_TF32_128": convTCSharedTF32x128, "CTC_SHARED_TF32_64": convTCSharedTF32x64,
		"CTC_SHARED_BF16_128": convTCSharedBF16x128, "CTC_SHARED_BF16_64": convTCSharedBF16x64,
	} {
		if got := kernelDefine(t, src, "conv_tc.cuh", name); got != want {
			t.Errorf("%s = %d in conv_tc.cuh, %d in conv_tc.go", name, got, want)
		}
	}
}

// TestConvWGSharedConstants checks the launchers' shared memory against
// conv_wg.cu's CWG_SHARED_* (which the kernel checks against its stages
// with static_assert).
func TestConvWGSharedConstants(t *testing.T) {
	src := kernelSource(t, "conv_wg.cu")
	for name, want := range map[string]int{"CWG_SHARED_128": convWGShared128, "CWG_SHARED_64": convWGShared64} {
		if got := kernelDefine(t, src, "conv_wg.cu", name); got != want {
			t.Errorf("%s = %d in conv_wg.cu, %d in conv_tc.go", name, got, want)
		}
	}
}

// TestConvTCSplits: chunks are whole panels covering the reduction, at
// most one block a multiprocessor.
func TestConvTCSplits(t *testing.T) {
	for _, tc := range []struct{ p, tiles, sms int }{
		{0, 1, 132}, {1, 1, 132}, {960, 1, 4}, {262144, 2, 132}, {262144, 400, 132}, {1000, 1, 1},
	} {
		splits, chunk := convTCSplits(tc.p, tc.tiles, tc.sms)
		if chunk%convTCChunk != 0 || splits < 1 || (tc.p > 0 && (splits*chunk < tc.p || (splits-1)*chunk >= tc.p)) {
			t.Errorf("convTCSplits(%d, %d, %d) = %d chunks of %d", tc.p, tc.tiles, tc.sms, splits, chunk)
		}
		if splits > 1 && splits*tc.tiles > tc.sms {
			t.Errorf("convTCSplits(%d, %d, %d) = %d chunks: more blocks than multiprocessors", tc.p, tc.tiles, tc.sms, splits)
		}
	}
}

// sanitizing reports whether the GPU tests are to leave out their
// ResNet-sized layers: DUEL_GPU_SMALL is set by bench/gpu_check.sh's
// run-sanitize (compute-sanitizer slows them down a hundredfold) and by
// TestConvTCFakeDriver (the fake driver runs the kernels on the emulator).
func sanitizing() bool { return os.Getenv("DUEL_GPU_SMALL") != "" }

// TestConvTCRows: 64-row tiles for products of at most 64 rows, and for
// larger ones where 128-row tiles would leave more than half of the
// multiprocessors idle and 64-row ones make more blocks.
func TestConvTCRows(t *testing.T) {
	for _, tc := range []struct {
		m, n, sms, want int
	}{
		{64, 1 << 20, 132, 64},    // few rows
		{1, 1, 132, 64},           // one element
		{512, 4096, 132, 64},      // ResNet-50's last stage: 64 tiles of 128 rows, 128 of 64
		{512, 16384, 132, 128},    // 256 tiles of 128 rows: every multiprocessor busy
		{256, 16384, 132, 128},    // 128 tiles: just under a wave, not half
		{70, 84, 2, 64},           // the emulator's 2: one tile of 128 rows, two of 64
		{130, 300, 2, 128},        // 4 tiles of 128 rows
		{2048, 256, 132, 64},      // 16 tiles of 128 rows, 32 of 64
		{65, 256, 132, 64},        // 1 tile either way in columns, 2 of 64 rows
		{4096, 1 << 20, 132, 128}, // large
	} {
		if got := convTCRows(tc.m, tc.n, tc.sms); got != tc.want {
			t.Errorf("convTCRows(%d, %d, %d) = %d, want %d", tc.m, tc.n, tc.sms, got, tc.want)
		}
	}
}

// truncTF32 is what the tensor cores read of an FP32 value given to
// wgmma as TF32: its top 19 bits (conv_wg.cu's factors, never rounded).
func truncTF32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ 0x1fff) }

// TestConvTFRoundingEmulated pins how each TF32 convolution treats
// factors that are not already TF32: the *_tf32rr and *_tf32rl kernels
// (TCAuto, TCV4) round them to nearest, conv_wg.cu's (TCWG) truncate
// them, and under TCWG a weight gradient of few weight columns, which
// takes conv_tc.cu's transposed product (conv_wgradt_tc*_tf32rr), rounds
// them. Each pass runs on raw random factors on the emulator and is
// compared with the CPU's on factors rounded or truncated beforehand,
// whose products are exact in float32: the other rounding would differ by
// about 2^-11 of each product, far beyond convClose's float32 summation
// tolerance. It skips without g++ or under -short.
func TestConvTFRoundingEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	cpuB, err := tensor.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpuB.(tensor.ConvBackend)
	// 64 x 63 weights: the transposed weight gradient's tiles (63 x 64)
	// cover no less area; 70 x 63: they do.
	square := tensor.ConvShape{N: 2, In: 7, Out: 64, H: 9, W: 8, K: 3, S: 1, P: 1, ChannelMajor: true}
	tall := square
	tall.Out = 70
	for _, tc := range []struct {
		kind         TCKernel
		s            tensor.ConvShape
		round, wgrad func(float32) float32
	}{
		{TCAuto, tall, roundTF32, roundTF32},
		{TCV4, tall, roundTF32, roundTF32},
		{TCWG, square, truncTF32, truncTF32},
		{TCWG, tall, truncTF32, roundTF32},
	} {
		s := tc.s
		oh, ow := s.OutH(), s.OutW()
		t.Run(fmt.Sprintf("%v/O=%d", tc.kind, s.Out), func(t *testing.T) {
			be, err := newBackend(e, 64)
			if err != nil {
				t.Fatal(err)
			}
			be.SetPrecision(TF32)
			be.SetTCKernel(tc.kind)
			r := rand.New(rand.NewPCG(23, 1))
			x, w, dy := randSlice(r, s.N*s.In*s.H*s.W), randSlice(r, s.Out*s.In*s.K*s.K), randSlice(r, s.Out*s.N*oh*ow)
			rounded := func(v []float32) tensor.Operand { return hostOperand(mapSlice(v, tc.round)) }
			al, gal := cpu.ConvAlgos(s, 0), be.ConvAlgos(s, 0)
			gx, gw, gdy := devOperand(be, x), devOperand(be, w), devOperand(be, dy)

			want := make([]float32, len(dy))
			cpu.ConvForward(hostOperand(want), rounded(x), rounded(w), tensor.Operand{}, s, al, false)
			got := devOperand(be, make([]float32, len(dy)))
			be.ConvForward(got, gx, gw, tensor.Operand{}, s, gal, false)
			convClose(t, "forward", fromDev(be, got), want, s.In*s.K*s.K, 1)

			want = make([]float32, len(x))
			cpu.ConvInputGrad(hostOperand(want), rounded(dy), rounded(w), s, al, nil, false)
			got = devOperand(be, make([]float32, len(x)))
			be.ConvInputGrad(got, gdy, gw, s, gal, nil, false)
			convClose(t, "input grad", fromDev(be, got), want, s.Out*s.K*s.K, 1)

			want = make([]float32, len(w))
			cpu.ConvWeightGrad(hostOperand(want), hostOperand(mapSlice(dy, tc.wgrad)), hostOperand(mapSlice(x, tc.wgrad)), s, al, false)
			got = devOperand(be, make([]float32, len(w)))
			be.ConvWeightGrad(got, gdy, gx, s, gal, false)
			convClose(t, "weight grad", fromDev(be, got), want, s.N*oh*ow, 1)
			if err := be.Synchronize(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// mapSlice returns f of each element of v.
func mapSlice(v []float32, f func(float32) float32) []float32 {
	out := make([]float32, len(v))
	for i := range v {
		out[i] = f(v[i])
	}
	return out
}

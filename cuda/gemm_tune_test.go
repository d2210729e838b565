package cuda

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duel-ssl/duel/internal/cudatest"
	"github.com/duel-ssl/duel/tensor"
)

// tuneShape is the product the measurement tests run: an odd shape over
// two tiles of B's 256 columns, beta not 0 (the cross-check multiplies
// into scratch memory with beta 0; the product itself must still add
// beta C).
var tuneShape = tensor.GemmArgs{M: 130, N: 300, K: 72, Alpha: 1.5, Beta: 0.5, Batch: 1, LDA: 72, LDB: 300, LDC: 300}

// tuneRun runs the products of one shape's measurement and one more on
// be (TCAuto, measuring) and checks each against ref's (TCWG) bit for
// bit, on fresh factors each time.
func tuneRun(t *testing.T, be, ref *Backend, g tensor.GemmArgs, r *rand.Rand) {
	t.Helper()
	na, nb, nc := gemmSizes(g)
	for i := range 3 + (1+len(gemmTuneKinds))*GemmTuneSamples {
		a, b, c := randSlice(r, na), randSlice(r, nb), randSlice(r, nc)
		sameBits(t, fmt.Sprintf("product %d", i), runGemm(be, g, a, b, c), runGemm(ref, g, a, b, c))
	}
}

// onlyTune returns the backend's single measurement.
func onlyTune(t *testing.T, be *Backend) GemmTune {
	t.Helper()
	tunes := be.GemmTunes()
	if len(tunes) != 1 {
		t.Fatalf("GemmTunes: %d shapes, want 1: %+v", len(tunes), tunes)
	}
	return tunes[0]
}

// TestGemmTuneEmulated runs TCAuto's measurement (gemm_tune.go) on the
// CPU emulator, with made-up times, for 9.0's candidates (the emulator's
// compute capability 0: gemm_wg.cu's kernels) and 8.0's (the mma.sync
// kernels): every product of the measurement (the cross-check's, the
// timed ones, the chosen kernel's) equals gemm_wg_*'s bit for bit, beta
// included; the candidate with the lowest median is chosen; a candidate
// whose cross-check product differs is refused and never timed. The
// reference at this size is gemm_tc3_tf32 or gemm_tc2_bf16.
func TestGemmTuneEmulated(t *testing.T) {
	e := cudatest.NewEmulator(t)
	r := rand.New(rand.NewPCG(11, 13))
	// The samples of the candidates in their order (the reference first),
	// in milliseconds: medians 4, 3, 5 and 2.
	times := [][]time.Duration{{4, 4, 4}, {3, 3, 3}, {5, 1, 6}, {2, 9, 2}}
	for _, tc := range []struct {
		cc    int
		p     Precision
		cands []string
	}{
		{0, TF32, []string{"gemm_tc3_tf32", "gemm_wg_tf32", "gemm_wgs_tf32", "gemm_wgp_tf32"}},
		{0, BF16, []string{"gemm_tc2_bf16", "gemm_wg_bf16", "gemm_wgs_bf16", "gemm_wgp_bf16"}},
		{80, TF32, []string{"gemm_tc3_tf32", "gemm_tc2_tf32", "gemm_tf32"}},
		{80, BF16, []string{"gemm_tc2_bf16", "gemm_bf16"}},
	} {
		t.Run(fmt.Sprintf("sm%d/%v", tc.cc, tc.p), func(t *testing.T) {
			for _, corrupt := range []bool{false, true} {
				be, ref := backendOnEmulator(t, e, tc.p, TCAuto), backendOnEmulator(t, e, tc.p, TCWG)
				be.cc, be.tune.anyCC, be.tune.minSize = tc.cc, true, 64
				seen := map[string]int{}
				be.tune.sampleTime = func(kernel string) time.Duration {
					i := slices.Index(tc.cands, kernel)
					if i < 0 {
						t.Fatalf("timed %s, not a candidate %v", kernel, tc.cands)
					}
					n := seen[kernel]
					seen[kernel]++
					return times[i][n] * time.Millisecond
				}
				last := tc.cands[len(tc.cands)-1]
				if corrupt {
					be.tune.corrupt = func(kernel string, out []byte) {
						if kernel == last {
							out[4*(301)+3] ^= 0x40 // row 1, column 1
						}
					}
				}
				if !be.tunesGemm(tuneShape) {
					t.Fatal("tunesGemm: false under TCAuto with anyCC")
				}
				tuneRun(t, be, ref, tuneShape, r)
				tune := onlyTune(t, be)
				kept := tc.cands
				if corrupt {
					kept = kept[:len(kept)-1]
					if len(tune.Refused) != 1 || !strings.Contains(tune.Refused[0], last+" differs from "+tc.cands[0]+" at element 301 (batch 0, row 1, column 1)") {
						t.Errorf("Refused %q, want %s's difference from %s at element 301", tune.Refused, last, tc.cands[0])
					}
					if seen[last] != 0 {
						t.Errorf("the refused %s was timed %d times", last, seen[last])
					}
				} else if len(tune.Refused) != 0 {
					t.Errorf("Refused %q, want none", tune.Refused)
				}
				want, wantMedians := kept[0], map[string]time.Duration{}
				if len(kept) > 1 { // else nothing is timed
					for i, name := range kept {
						wantMedians[name] = times[i][0] * time.Millisecond // each median its first sample
						if wantMedians[name] < wantMedians[want] {
							want = name
						}
					}
				}
				if tune.Kernel != want || tune.Reference != tc.cands[0] {
					t.Errorf("corrupt %v: Kernel %q (reference %q), want %q (%q); medians %v", corrupt, tune.Kernel, tune.Reference, want, tc.cands[0], tune.Medians)
				}
				if len(tune.Medians) != len(wantMedians) {
					t.Errorf("corrupt %v: Medians %v, want %v", corrupt, tune.Medians, wantMedians)
				}
				for name, m := range tune.Medians {
					if w, ok := wantMedians[name]; !ok || m != w {
						t.Errorf("corrupt %v: median of %s %v, want %v", corrupt, name, m, w)
					}
				}
				if name, ok := be.gemmTunedName(tuneShape); !ok || name != want {
					t.Errorf("gemmTunedName: %s %v, want %s true", name, ok, want)
				}
				if lines := be.KernelChoices(); len(lines) != 1 || !strings.HasPrefix(lines[0], fmt.Sprintf("gemm %v 130x300x72: %s (", tc.p, want)) ||
					len(kept) > 1 && !strings.Contains(lines[0], fmt.Sprintf("medians %s %.3f ms, ", want, float64(wantMedians[want])/1e6)) ||
					corrupt != strings.Contains(lines[0], "refused: "+last+" differs") {
					t.Errorf("KernelChoices() = %q", lines)
				}
			}
		})
	}
}

// TestGemmTuneWhere checks which products are measured: TCAuto's TF32
// and BF16 products from gemmTuneMin on, on compute capability 8.0 and later, with
// results up to gemmTuneMaxBytes; and that settleGemm and the kernel's
// name need no product where only the reference fits the device's
// shared memory.
func TestGemmTuneWhere(t *testing.T) {
	big := tensor.GemmArgs{M: 1024, N: 2048, K: 1024, Batch: 1}
	for _, tc := range []struct {
		cc   int
		k    TCKernel
		p    Precision
		g    tensor.GemmArgs
		want bool
	}{
		{90, TCAuto, TF32, big, true},
		{90, TCAuto, BF16, big, true},
		{90, TCAuto, FP32, big, false},
		{90, TCWG, TF32, big, false},
		{90, TCWGP, BF16, big, false},
		{80, TCAuto, TF32, big, true},
		{86, TCAuto, BF16, big, true},
		{75, TCAuto, TF32, big, false},
		{0, TCAuto, TF32, big, false},
		{90, TCAuto, TF32, tensor.GemmArgs{M: 256, N: 1023, K: 4096, Batch: 1}, true},
		{90, TCAuto, BF16, tensor.GemmArgs{M: 4096, N: 4096, K: 255, Batch: 1}, false},
		{90, TCAuto, TF32, tensor.GemmArgs{M: 255, N: 1024, K: 1024, Batch: 1}, false},
		{90, TCAuto, TF32, tensor.GemmArgs{M: 8192, N: 8192, K: 1024, Batch: 1}, true},  // 256 MiB of result
		{90, TCAuto, TF32, tensor.GemmArgs{M: 8192, N: 8192, K: 1024, Batch: 2}, false}, // 512 MiB
	} {
		be, err := newBackend(&optInHost{Host: cudatest.NewHost(), max: 227 << 10}, 32)
		if err != nil {
			t.Fatal(err)
		}
		be.cc = tc.cc
		be.SetPrecision(tc.p)
		be.SetTCKernel(tc.k)
		if got := be.tunesGemm(tc.g); got != tc.want {
			t.Errorf("sm %d, %v, %v, %dx%dx%d batch %d: tunesGemm %v, want %v", tc.cc, tc.k, tc.p, tc.g.M, tc.g.N, tc.g.K, tc.g.Batch, got, tc.want)
		}
	}
	// Shared memory for gemm_wg_* (193 KiB) but not for gemm_wgp_* (16
	// bytes more) nor gemm_wgs_* (64): nothing to measure, no product run.
	be, err := newBackend(&optInHost{Host: cudatest.NewHost(), max: wgShared}, 32)
	if err != nil {
		t.Fatal(err)
	}
	be.cc = 90
	be.SetPrecision(TF32)
	if name := be.settleGemm(big); name != "gemm_wg_tf32" {
		t.Errorf("one candidate: settleGemm %s, want gemm_wg_tf32", name)
	}
	if tune := onlyTune(t, be); tune.Kernel != "gemm_wg_tf32" || tune.Reference != "gemm_wg_tf32" || tune.Medians != nil || tune.Refused != nil {
		t.Errorf("one candidate: %+v, want gemm_wg_tf32 without measurement", tune)
	}
	// GemmTunes' order: by shape, whatever the order of the products.
	for _, g := range []tensor.GemmArgs{{M: 2048, N: 1024, K: 1024, Batch: 1}, {M: 1024, N: 1024, K: 1024, Batch: 2}, {M: 1024, N: 1024, K: 1024, Batch: 1, TransB: true}} {
		be.settleGemm(g)
	}
	var got []string
	for _, tune := range be.GemmTunes() {
		got = append(got, fmt.Sprintf("%dx%dx%d/%d/%v", tune.M, tune.N, tune.K, tune.Batch, tune.TransB))
	}
	if want := "[1024x1024x1024/1/true 1024x1024x1024/2/false 1024x2048x1024/1/false 2048x1024x1024/1/false]"; fmt.Sprint(got) != want {
		t.Errorf("GemmTunes' shapes %v, want %s", got, want)
	}
	// No shared memory for gemm_wg.cu's kernels: the product runs as
	// gemmFor says.
	be, err = newBackend(&optInHost{Host: cudatest.NewHost(), max: 180 << 10}, 32)
	if err != nil {
		t.Fatal(err)
	}
	be.cc = 90
	be.SetPrecision(TF32)
	if name, ok := be.gemmTunedName(big); !ok || name != "gemm_tc3_tf32" {
		t.Errorf("no gemm_wg.cu kernel: gemmTunedName %s %v, want gemm_tc3_tf32 true", name, ok)
	}
}

// TestGemmTuneKernel runs TCAuto's measurement on a GPU of compute
// capability 8.0 or later (lowered to this small shape, whose reference
// is gemm_tc3_tf32 or gemm_tc2_bf16 where the device gives them their
// shared memory): every product equals TCWG's (on 9.0: gemm_wg_*'s;
// elsewhere TCAuto's) bit for bit, no candidate is refused, and each is
// timed. (On an H100/H200, a refusal says that mma.sync and wgmma round
// differently there.)
// It logs the choice and the medians. GPU only (the fake driver runs it
// at compute capability 9.0: events, opt-ins and launches through the
// driver binding).
func TestGemmTuneKernel(t *testing.T) {
	d := needGPU(t)
	for _, p := range []Precision{TF32, BF16} {
		t.Run(p.String(), func(t *testing.T) {
			be, ref := backendIn(t, d, p, TCAuto), backendIn(t, d, p, TCWG)
			be.tune.minSize = 64
			if !be.tunesGemm(tuneShape) {
				t.Skipf("TCAuto measures the products' kernels from compute capability 8.0 on (%v)", d)
			}
			tuneRun(t, be, ref, tuneShape, rand.New(rand.NewPCG(3, 4)))
			if err := be.Synchronize(); err != nil {
				t.Fatal(err)
			}
			tune := onlyTune(t, be)
			t.Logf("%v %dx%dx%d: kernel %s, medians %v, refused %q (reference %s)", p, tune.M, tune.N, tune.K, tune.Kernel, tune.Medians, tune.Refused, tune.Reference)
			if len(tune.Refused) != 0 || tune.Kernel == "" {
				t.Errorf("kernel %q, refused %q: want a kernel and no refusal", tune.Kernel, tune.Refused)
			}
			if n := len(be.tuneCandidates(tuneShape)); len(tune.Medians) != n && n > 1 {
				t.Errorf("medians %v: want %d candidates", tune.Medians, n)
			}
			for n, m := range tune.Medians {
				if m <= 0 {
					t.Errorf("median of %s %v, want > 0", n, m)
				}
			}
		})
	}
}

// logGemmTunes logs the backend's measurements of gemm_wg.cu's kernels
// (benchmarks).
func logGemmTunes(tb testing.TB, be *Backend) {
	for _, t := range be.GemmTunes() {
		if t.Medians != nil || t.Refused != nil {
			tb.Logf("measured %v %dx%dx%d: %s; medians %v; refused %q", t.Precision, t.M, t.N, t.K, t.Kernel, t.Medians, t.Refused)
		}
	}
}

// TestKernelTimes checks the list of measured kernels that bench gemm
// prints and KernelChoices writes: fastest first, ties by name.
func TestKernelTimes(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]time.Duration
		want string
	}{
		{map[string]time.Duration{}, ""},
		{map[string]time.Duration{"gemm_wg_bf16": 320 * time.Microsecond}, "gemm_wg_bf16 0.320 ms"},
		{map[string]time.Duration{"gemm_wg_bf16": 320 * time.Microsecond, "gemm_wgp_bf16": 271 * time.Microsecond, "gemm_wgs_bf16": 320 * time.Microsecond},
			"gemm_wgp_bf16 0.271 ms, gemm_wg_bf16 0.320 ms, gemm_wgs_bf16 0.320 ms"},
	} {
		if got := KernelTimes(tc.in); got != tc.want {
			t.Errorf("KernelTimes(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

package cuda

import (
	"fmt"
	"os"
	"strings"

	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// Precision is the arithmetic of the backend's matrix products (Gemm).
// Every precision reads and writes float32 and accumulates in float32;
// they differ in how the factors are rounded before they are multiplied.
type Precision int

const (
	// FP32 multiplies the float32 factors as they are, with float FMAs
	// (sgemm_f32): every GPU.
	FP32 Precision = iota
	// TF32 rounds the factors to TF32 (8-bit exponent, 10-bit mantissa:
	// cvt.rna.tf32.f32, to nearest, ties away from zero) and multiplies on
	// the tensor cores (gemm_tf32): compute capability 8.0 and later.
	TF32
	// BF16 rounds the factors to bfloat16 (8-bit exponent, 7-bit mantissa,
	// to nearest even) and multiplies on the tensor cores (gemm_bf16):
	// compute capability 8.0 and later.
	BF16
)

// EnvPrecision names the environment variable that sets the precision of
// the backends NewBackend returns (and so of the one Available registers):
// fp32, tf32 or bf16.
const EnvPrecision = "DUEL_CUDA_PRECISION"

// tensorCoreCapability is the lowest compute capability whose PTX has the
// TF32 and BF16 mma.sync instructions (sm_80).
const tensorCoreCapability = 80

// String returns "fp32", "tf32" or "bf16".
func (p Precision) String() string {
	switch p {
	case FP32:
		return "fp32"
	case TF32:
		return "tf32"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision parses "fp32", "tf32" or "bf16" (any case).
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fp32":
		return FP32, nil
	case "tf32":
		return TF32, nil
	case "bf16":
		return BF16, nil
	}
	return FP32, fmt.Errorf("cuda: precision %q: expected fp32, tf32 or bf16", s)
}

// DefaultPrecision returns the precision NewBackend gives its backend (and
// so the one Available registers): $DUEL_CUDA_PRECISION when it is set,
// else FP32, PyTorch's default for matrix products since 1.12
// (torch.backends.cuda.matmul.allow_tf32 = False). TF32 and BF16 run as
// FP32 below compute capability 8.0 (see Backend.SetPrecision). An
// invalid value of the variable is an error.
func DefaultPrecision() (Precision, error) { return envPrecision(EnvPrecision, FP32) }

// envPrecision returns the precision the environment variable name sets,
// or def when it is unset or empty; an invalid value is an error naming
// the variable.
func envPrecision(name string, def Precision) (Precision, error) {
	return envSetting(name, def, ParsePrecision, "fp32, tf32 or bf16")
}

// envSetting returns the value the environment variable name sets, parsed
// by parse, or def when it is unset or empty; a value parse refuses is an
// error naming the variable, the value and what is expected.
func envSetting[T any](name string, def T, parse func(string) (T, error), expected string) (T, error) {
	s, ok := os.LookupEnv(name)
	if !ok || s == "" {
		return def, nil
	}
	v, err := parse(s)
	if err != nil {
		return def, fmt.Errorf("cuda: %s=%q: expected %s (or unset it)", name, s, expected)
	}
	return v, nil
}

// SetPrecision sets the precision of the backend's matrix products and of
// its convolutions (SetConvPrecision then sets the convolutions' alone)
// and returns the one they will run in: p, or FP32 when p needs tensor
// cores (TF32, BF16) and the device's compute capability is below 8.0
// (there the products fall back to sgemm_f32 and the convolutions to
// conv.cu). Products already queued keep theirs. It is not safe to call
// while other goroutines use the backend.
func (be *Backend) SetPrecision(p Precision) Precision {
	if p != FP32 && p != TF32 && p != BF16 {
		panic(fmt.Sprintf("cuda: Backend.SetPrecision(%v): expected FP32, TF32 or BF16", p))
	}
	be.prec = be.supported(p)
	be.convPrec = be.prec
	return be.prec
}

// supported returns p where the device runs it, FP32 where p needs tensor
// cores the device lacks (compute capability below 8.0; 0, unknown, as on
// the emulator, allows them).
func (be *Backend) supported(p Precision) Precision {
	if p != FP32 && be.cc != 0 && be.cc < tensorCoreCapability {
		return FP32
	}
	return p
}

// Precision returns the precision the backend's matrix products run in.
func (be *Backend) Precision() Precision { return be.prec }

// Precisions returns the names of the precisions of the backend's matrix
// products and convolutions (what a run records: train's Config.Ran).
func (be *Backend) Precisions() (products, convolutions string) {
	return be.prec.String(), be.convPrec.String()
}

// UsePrecision sets the precision of the products and convolutions of the
// backend registered as "cuda" (calling Available first) from s ("fp32",
// "tf32" or "bf16", as a --precision flag gives it) and returns the
// precision its products will run in (FP32 for TF32 and BF16 below
// compute capability 8.0).
func UsePrecision(s string) (Precision, error) { return useRegistered(s, (*Backend).SetPrecision) }

// useRegistered parses s and applies it to the registered backend with
// set (SetPrecision or SetConvPrecision), returning what set returns.
func useRegistered(s string, set func(*Backend, Precision) Precision) (Precision, error) {
	p, err := ParsePrecision(s)
	if err != nil {
		return FP32, err
	}
	be, err := Registered()
	if err != nil {
		return FP32, err
	}
	return set(be, p), nil
}

// TCKernel selects the tensor-core kernels of TF32 and BF16 products.
type TCKernel int

const (
	// TCAuto uses, where the device gives them their dynamic shared
	// memory (tc2Shared), TCV3's kernels for TF32 (gemm_tc3_tf32 and the
	// *_tf32rr convolutions, faster than TCV2's on an H100:
	// bench/RESULTS.md, "NVIDIA H100")
	// and gemm_tc2_bf16 for BF16 (TCV2), else gemm_tf32 and gemm_bf16
	// (TCV1); on compute capability 9.0, products with M, N and K all at
	// least wgAutoMin (1024) run with gemm_wg.cu's gemm_wg_*. From 8.0 on,
	// products from 256 on in M, N and K run with the fastest of that
	// kernel and the others the device holds (on 9.0 gemm_wg_*,
	// gemm_wgs_* and gemm_wgp_*; elsewhere the mma.sync ones) on the GPU
	// at hand, measured on the backend's first products of each shape
	// after a bit-for-bit cross-check (gemm_tune.go, Backend.GemmTunes;
	// not where the result exceeds 256 MiB). On 9.0 TF32 convolutions
	// run with conv_wg.cu's kernels (faster than the rr ones in the
	// ResNet-50 step on an H200: bench/RESULTS.md, "NVIDIA H200";
	// convTCForRows). It is the default.
	TCAuto TCKernel = iota
	// TCV1 uses gemm_tf32 and gemm_bf16: 128 x 128 tiles, panels of 16
	// words double-buffered through registers, 40 KiB of static shared
	// memory.
	TCV1
	// TCV2 uses gemm_tc2_tf32 and gemm_tc2_bf16: 128 x 256 tiles (64 x 64
	// per warp), a 3-stage cp.async pipeline of 32-deep panels, 162 KiB
	// (TF32) or 204 KiB (BF16) of dynamic shared memory; products fail
	// (a *tensor.DeviceError) where the device cannot give it.
	TCV2
	// TCV3 uses gemm_tc3_tf32 for TF32 products and conv_tc.cu's
	// *_tf32rr kernels for TF32 convolutions: gemm_tc2's and conv_tc's
	// pipelines with the factors rounded in registers after each fragment
	// load instead of by a pass over each panel in shared memory before
	// the panel's barrier (the same bits as TCV2's; TCAuto's TF32 kernels).
	// BF16 runs as under TCAuto.
	TCV3
	// TCWG runs TF32 and BF16 products with gemm_wg.cu's kernels where
	// the device is of compute capability 9.0 and gives them their
	// dynamic shared memory (wgShared): both factors packed K-major and
	// rounded into scratch memory (gemm_wg_pack_*), then multiplied with
	// Hopper's warpgroup MMA (wgmma, sm_90a) in 128 x 256 tiles, and TF32
	// convolutions with conv_wg.cu's wgmma implicit GEMMs (their factors
	// truncated to TF32 by the tensor cores, not rounded); elsewhere it
	// runs as TCAuto. TCAuto runs its products from wgAutoMin on and its
	// convolutions on compute capability 9.0.
	TCWG
	// TCWG3 is TCWG with gemm_wg3_tf32 and gemm_wg3_bf16: 192 x 256 tiles,
	// three warpgroups a block, 225 KiB of dynamic shared memory (wg3Shared),
	// 22% fewer bytes from L2 a product than TCWG's tiles, more rows of
	// padding and fewer blocks to spread over the SMs: slower than TCWG
	// on an H200.
	TCWG3
	// TCWGM is TCWG with gemm_wgm_tf32 and gemm_wgm_bf16: the factors
	// packed in 64-row units of swizzled 128-byte k-tiles
	// (gemm_wg_packt_*), loaded by bulk copies (the copy engine, one
	// thread issuing them, mbarriers between the copies and the products)
	// into clusters of two blocks along m, each block copying half of B's
	// tile into both: a third fewer bytes from L2 than TCWG's, no cp.async
	// a thread. Slower than TCWG on an H200 (bench/RESULTS.md,
	// "NVIDIA H200").
	TCWGM
	// TCWGM3 is TCWGM with 192 x 256 tiles (gemm_wgm3_*, three
	// warpgroups): 45% fewer bytes from L2 a FLOP than TCWG's. Slower
	// than TCWG on an H200 (bench/RESULTS.md, "NVIDIA H200").
	TCWGM3
	// TCWGMS is TCWGM warp-specialised (gemm_wgms_*): a ninth warp issues
	// the bulk copies, so that no warpgroup waits between its products
	// for the other block to free a stage. As slow as TCWGM on an H200
	// (bench/RESULTS.md, "NVIDIA H200").
	TCWGMS
	// TCWGS is TCWGMS without the cluster (gemm_wgs_*): each block's
	// producer warp copies all of B's tile into its own shared memory,
	// and only its own warpgroups free a stage. On an H200 its product is
	// faster than TCWG's and its tiled packing slower in BF16: a few
	// percent faster end to end (bench/RESULTS.md, "NVIDIA H200"). One of
	// TCAuto's candidates on 9.0.
	TCWGS
	// TCV4 is TCV3 with conv_tc.cu's *_tf32rl kernels for TF32
	// convolutions: the *_tf32rr kernels with the gathered operand mapped
	// as conv_wg.cu maps it (a warp's 4-byte copy covers 8 columns at 4 k:
	// 4 sectors from global memory and no bank conflict, where the rr
	// kernels' covers 32 columns 4 apart at one k, 16 sectors, 4-way
	// conflicts; in the weight gradient 32 weight columns across some 14
	// channels' planes). On an H200 as fast as the rr kernels at stride
	// 1, faster on weight gradients and in the ResNet-50 step, but slower
	// than conv_wg's there (bench/RESULTS.md, "NVIDIA H200"): not the
	// default.
	TCV4
	// TCWGP is TCWG with gemm_wgp_tf32 and gemm_wgp_bf16: the packing and
	// the product in one launch, a third warpgroup of each block packing
	// the factors in chunks of k that any running block claims while the
	// first two multiply (the products wait for each chunk's count), so
	// that the packing's time (a sizeable share of TCWG's on an H200:
	// bench/RESULTS.md, "NVIDIA H200") hides behind the first tiles'
	// products; convolutions as under TCWG. Not timed on a GPU yet; one of
	// TCAuto's candidates on 9.0, which it runs where it measures faster.
	TCWGP
)

// EnvTCKernel names the environment variable that sets the tensor-core
// kernels of the backends NewBackend returns: auto, v1, v2, v3, v4, wg,
// wg3, wgm, wgm3, wgms, wgs or wgp (see TCKernel; unset: auto).
const EnvTCKernel = "DUEL_CUDA_TC_KERNEL"

// tcKernels lists the TCKernel values.
var tcKernels = []TCKernel{TCAuto, TCV1, TCV2, TCV3, TCV4, TCWG, TCWG3, TCWGM, TCWGM3, TCWGMS, TCWGS, TCWGP}

// ParseTCKernel parses "auto", "v1", "v2", "v3", "v4", "wg", "wg3",
// "wgm", "wgm3", "wgms", "wgs" or "wgp" (any case).
func ParseTCKernel(s string) (TCKernel, error) {
	for _, k := range tcKernels {
		if strings.EqualFold(strings.TrimSpace(s), k.String()) {
			return k, nil
		}
	}
	return TCAuto, fmt.Errorf("cuda: tensor-core kernels %q: expected auto, v1, v2, v3, v4, wg, wg3, wgm, wgm3, wgms, wgs or wgp", s)
}

// DefaultTCKernel returns the tensor-core kernels NewBackend gives its
// backend: $DUEL_CUDA_TC_KERNEL when it is set, else TCAuto. An invalid
// value of the variable is an error.
func DefaultTCKernel() (TCKernel, error) {
	return envSetting(EnvTCKernel, TCAuto, ParseTCKernel, "auto, v1, v2, v3, v4, wg, wg3, wgm, wgm3, wgms, wgs or wgp")
}

// String returns "auto", "v1", "v2", "v3", "v4", "wg", "wg3", "wgm",
// "wgm3", "wgms", "wgs" or "wgp".
func (k TCKernel) String() string {
	switch k {
	case TCAuto:
		return "auto"
	case TCV1:
		return "v1"
	case TCV2:
		return "v2"
	case TCV3:
		return "v3"
	case TCV4:
		return "v4"
	case TCWG:
		return "wg"
	case TCWG3:
		return "wg3"
	case TCWGM:
		return "wgm"
	case TCWGM3:
		return "wgm3"
	case TCWGMS:
		return "wgms"
	case TCWGS:
		return "wgs"
	case TCWGP:
		return "wgp"
	}
	return fmt.Sprintf("TCKernel(%d)", int(k))
}

// Dynamic shared memory of gemm_tc2_tf32 and gemm_tc2_bf16 in bytes:
// TC2_SHARED_TF32 and TC2_SHARED_BF16 of kernels/cuda/gemm_tc.cu (a test
// reads them there).
const (
	tc2SharedTF32 = 165888
	tc2SharedBF16 = 208896
	tc3SharedTF32 = tc2SharedTF32 // gemm_tc3_tf32's
)

// tcState is a backend's choice of tensor-core kernels and, per gemm_tc2
// kernel, whether the device gave it its shared memory (0 not asked yet,
// 1 yes, -1 no).
type tcState struct {
	kernel TCKernel
	ok     [3 + 2*7]int8 // gemm_tc2_tf32, gemm_tc2_bf16, gemm_tc3_tf32, then wgVariants' TF32 and BF16 kernels
}

// SetTCKernel sets the tensor-core kernels of the backend's TF32 and BF16
// products (TCAuto by default; BenchmarkGemmPrecision times TCV1, TCV2
// and TCV3 side by side). It is not safe to call while other goroutines use the
// backend.
func (be *Backend) SetTCKernel(k TCKernel) {
	if k < TCAuto || k > TCWGP {
		panic(fmt.Sprintf("cuda: Backend.SetTCKernel(%v): expected TCAuto, TCV1, TCV2, TCV3, TCV4, TCWG, TCWG3, TCWGM, TCWGM3, TCWGMS, TCWGS or TCWGP", k))
	}
	be.tc.kernel = k
}

// gemmChoice is the kernel of one product: its launcher and name, the
// tile of C of one block (tileM x tileN) and its dynamic shared memory.
type gemmChoice struct {
	launch       gemmKernel
	name         string
	tileM, tileN int
	shared       int
	wg           wgKernels // gemm_wg.cu's pair (launch unused; see isWG), or none
}

// gemmLaunch returns the kernel of the backend's products in its
// precision: sgemm_f32 (FP32); gemm_tc2_tf32 or gemm_tc2_bf16 under TCV2;
// gemm_tc3_tf32 (TF32) or gemm_tc2_bf16 under TCV3 and TCV4, and under TCAuto
// where tc2Allowed; else gemm_tf32 or gemm_bf16.
func (be *Backend) gemmLaunch() gemmChoice {
	switch be.prec {
	case TF32, BF16:
		i, v1, v2, v3 := mmaKernels(be.prec)
		if c, j, ok := wgChoice(be.prec, be.tc.kernel); ok && be.wgAllowed(c, j) {
			return c
		}
		switch be.tc.kernel {
		case TCV1:
			return v1
		case TCV3, TCV4:
			if be.prec == TF32 {
				be.tc2Allowed(2, v3) // opts in where it can; a launch beyond the device's limit fails
				return v3
			}
			be.tc2Allowed(i, v2)
			return v2
		case TCV2:
			be.tc2Allowed(i, v2) // opts in where it can; a launch beyond the device's limit fails
			return v2
		}
		if be.prec == TF32 && be.tc2Allowed(2, v3) {
			return v3
		}
		if be.tc2Allowed(i, v2) {
			return v2
		}
		return v1
	}
	return gemmChoice{kc.SgemmF32, "sgemm_f32", 64, 64, 0, wgKernels{}}
}

// mmaKernels returns precision p's mma.sync kernels (TF32 or BF16): TCV1's
// (v1), TCV2's (v2, index i of tcState.ok) and, for TF32, TCV3's
// gemm_tc3_tf32 (v3, index 2).
func mmaKernels(p Precision) (i int, v1, v2, v3 gemmChoice) {
	v3 = gemmChoice{kc.GemmTc3Tf32, "gemm_tc3_tf32", 128, 256, tc3SharedTF32, wgKernels{}}
	if p == BF16 {
		return 1, gemmChoice{kc.GemmBf16, "gemm_bf16", 128, 128, 0, wgKernels{}}, gemmChoice{kc.GemmTc2Bf16, "gemm_tc2_bf16", 128, 256, tc2SharedBF16, wgKernels{}}, v3
	}
	return 0, gemmChoice{kc.GemmTf32, "gemm_tf32", 128, 128, 0, wgKernels{}}, gemmChoice{kc.GemmTc2Tf32, "gemm_tc2_tf32", 128, 256, tc2SharedTF32, wgKernels{}}, v3
}

// wgAutoMin is the smallest M, N and K of a product that TCAuto runs
// with gemm_wg.cu's TCWG kernels on compute capability 9.0. The packing
// pass costs about 2.5x the factors' bytes in memory traffic, which the
// wgmma product repays at every size timed from 1024³ on, in TF32 and
// BF16 (bench/RESULTS.md, "NVIDIA H200"). Smaller products are not timed
// and keep the mma.sync kernels.
const wgAutoMin = 1024

// gemmFor returns the kernel of product g: gemmLaunch's, except that under
// TCAuto on a device of compute capability 9.0 a TF32 or BF16 product whose
// M, N and K are all at least wgAutoMin runs with gemm_wg_tf32 or
// gemm_wg_bf16 where the device gives them their shared memory. (Gemm
// first asks the shape's measurement, tunedGemm, which starts from this
// kernel and may choose one of gemm_wg.cu's.)
func (be *Backend) gemmFor(g tensor.GemmArgs) gemmChoice {
	c := be.gemmLaunch()
	if be.tc.kernel != TCAuto || be.cc != 90 || be.prec != TF32 && be.prec != BF16 || min(g.M, g.N, g.K) < wgAutoMin {
		return c
	}
	if w, i, ok := wgChoice(be.prec, TCWG); ok && be.wgAllowed(w, i) {
		return w
	}
	return c
}

// tc2Allowed reports whether the device gives gemm_tc2 kernel c (index i
// of tcState.ok) its dynamic shared memory, opting the kernel in on the
// first call: a GPU with SharedMemoryOptIn (a Device) must allow c.shared
// bytes per block (sm_80: 163 KiB, so gemm_tc2_tf32 only; sm_90: 227
// KiB) and accept the opt-in; one without (the CPU emulator) has no limit.
func (be *Backend) tc2Allowed(i int, c gemmChoice) bool {
	if be.tc.ok[i] == 0 {
		be.tc.ok[i] = 1
		mod := kc.GemmTcModule
		if c.isWG() {
			mod = kc.GemmWgModule
		}
		if s, ok := be.g.(SharedMemoryOptIn); ok {
			if n, err := s.MaxSharedOptIn(); err != nil || n < c.shared || s.OptInShared(mod, c.name, c.shared) != nil {
				be.tc.ok[i] = -1
			}
		}
	}
	return be.tc.ok[i] > 0
}

// gemmKernelName returns the name of the kernel the backend's products
// run with below wgAutoMin (gemmLaunch's; gemmFor gives a product's).
func (be *Backend) gemmKernelName() string { return be.gemmLaunch().name }

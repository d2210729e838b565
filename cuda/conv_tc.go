package cuda

import (
	"fmt"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// The convolutions run in the backend's convolution precision
// (SetConvPrecision, which SetPrecision sets too; TF32 by default where the
// device has tensor cores, as PyTorch's torch.backends.cudnn.allow_tf32
// is True by default): in tf32 and bf16 they
// run conv_tc.cu's tensor-core implicit GEMMs, their factors rounded as
// Gemm's are, where the device gives those kernels their shared memory
// (convTCFor); in fp32, or where it does not, conv.cu's FP32 kernels.

// The bytes of dynamic shared memory of conv_tc.cu's kernels
// (CTC_SHARED_*: TestConvTCSharedConstants), and of their static tables.
const (
	convTCSharedTF32x128 = 165888
	convTCSharedTF32x64  = 138240
	convTCSharedBF16x128 = 208896
	convTCSharedBF16x64  = 174080
	convTCStatic         = 768

	// conv_wg.cu's (CWG_SHARED_*: TestConvWGSharedConstants).
	convWGShared128 = 197632
	convWGShared64  = 164864

	convTCTileN = 256 // columns of the product per block
	convTCChunk = 32  // k per panel: the weight gradient's chunks are multiples of it
)

// convTCKernel is one of conv_tc.cu's or conv_wg.cu's kernels: its
// name, the rows of its tile, its dynamic shared memory and its module.
type convTCKernel struct {
	name   string
	rows   int
	shared int
	module *kc.Module
}

// convTCKey names a choice of convTCFor: the pass, the tile's rows and
// the precision.
type convTCKey struct {
	pass string
	rows int
	prec Precision
	rr   bool // TF32 under TCV3 and TCAuto: the *_tf32rr kernels
	rl   bool // TF32 under TCV4: the *_tf32rl kernels
	wg   bool // TF32 under TCWG (or TCAuto) on compute capability 9.0: conv_wg.cu's
}

// convTCChoice is convTCFor's answer for a key.
type convTCChoice struct {
	k  convTCKernel
	ok bool
}

// convTCState caches convTCFor's answers (the device's opt-in is asked
// once per key, and a convolution's launch builds no kernel name).
type convTCState map[convTCKey]convTCChoice

// convTCFor returns the tensor-core kernel of pass ("fwd", "dgrad",
// "wgrad" or "wgradt", the transposed weight gradient) for a product of m
// rows in the backend's precision: 64-row tiles for m <= 64, else 128;
// BF16 where the device allows its shared memory, else TF32 (a bf16
// backend on sm_80, whose 163 KiB do not hold BF16's panels), TF32 under
// TCV3 and TCAuto with the *_tf32rr kernels (rounding in registers),
// under TCV4 with the *_tf32rl ones (the same with conv_wg.cu's mapping
// of the gathers), under TCWG on compute capability 9.0 (or the
// emulator) and under TCAuto on 9.0 with conv_wg.cu's wgmma kernels (but
// for "wgradt", which it lacks; TCAuto's fallback where the device
// refuses their shared memory is the rr kernels); ok is false in fp32, or where none fits (conv.cu's FP32
// kernels then).
func (be *Backend) convTCFor(pass string, m int) (convTCKernel, bool) {
	rows := 128
	if m <= 64 {
		rows = 64
	}
	return be.convTCForRows(pass, rows)
}

// convTCForProduct is convTCFor for an m x n product on the backend's
// device: its tiles' rows from convTCRows.
func (be *Backend) convTCForProduct(pass string, m, n int) (convTCKernel, bool) {
	return be.convTCForRows(pass, convTCRows(m, n, be.g.Multiprocessors()))
}

// convTCRows returns the rows of the tiles of an m x n product on sms
// multiprocessors: 64 for m <= 64, and where 128-row tiles would keep at
// most half of the multiprocessors busy (one block each: ResNet-50's
// last stage, 512 rows of 4096 columns in 64 tiles on an H100's 132)
// while 64-row ones make more blocks; else 128.
func convTCRows(m, n, sms int) int {
	if m <= 64 {
		return 64
	}
	cols := (n + convTCTileN - 1) / convTCTileN
	t128, t64 := (m+127)/128*cols, (m+63)/64*cols
	if 2*t128 <= sms && t64 > t128 {
		return 64
	}
	return 128
}

// convTCForRows is convTCFor with the tiles' rows given.
func (be *Backend) convTCForRows(pass string, rows int) (convTCKernel, bool) {
	if be.convPrec != TF32 && be.convPrec != BF16 {
		return convTCKernel{}, false
	}
	rl := be.convPrec == TF32 && be.tc.kernel == TCV4 && pass != "wgradt"
	rr := be.convPrec == TF32 && (be.tc.kernel == TCV3 || be.tc.kernel == TCAuto || be.tc.kernel == TCV4 && !rl)
	// conv_wg.cu's kernels: under TCWG (and TCWGP) on compute capability
	// 9.0 or the emulator, and under TCAuto on 9.0, where the ResNet-50
	// step runs faster with them than with the rr kernels (bench/RESULTS.md,
	// "NVIDIA H200").
	wg := be.convPrec == TF32 && pass != "wgradt" &&
		((be.tc.kernel == TCWG || be.tc.kernel == TCWGP) && (be.cc == 0 || be.cc == 90) || be.tc.kernel == TCAuto && be.cc == 90)
	key := convTCKey{pass, rows, be.convPrec, rr, rl, wg}
	if c, seen := be.convTC[key]; seen {
		return c.k, c.ok
	}
	tile := ""
	if rows == 64 {
		tile = "64"
	}
	suffix := ""
	if rr {
		suffix = "rr"
	}
	if rl {
		suffix = "rl"
	}
	cands := []convTCKernel{{fmt.Sprintf("conv_%s_tc%s_tf32%s", pass, tile, suffix), rows, convTCShared(false, rows), convTCModules[suffix]}}
	if be.convPrec == BF16 {
		cands = append([]convTCKernel{{fmt.Sprintf("conv_%s_tc%s_bf16", pass, tile), rows, convTCShared(true, rows), kc.ConvTcBf16Module}}, cands...)
	}
	if wg {
		shared := convWGShared128
		if rows == 64 {
			shared = convWGShared64
		}
		cands = append([]convTCKernel{{fmt.Sprintf("conv_%s_wg%s_tf32", pass, tile), rows, shared, kc.ConvWgModule}}, cands...)
	}
	var c convTCChoice
	for _, k := range cands {
		if be.convTCAllowed(k) {
			c = convTCChoice{k, true}
			break
		}
	}
	if be.convTC == nil {
		be.convTC = convTCState{}
	}
	be.convTC[key] = c
	return c.k, c.ok
}

// convTCModules are the modules of the TF32 kernels by their names'
// suffix: conv_tc.cuh's kernels are split by version into modules, so
// that the driver JIT-compiles only the versions a run uses (all of them
// cost ptxas several times what the rr kernels alone do:
// bench/RESULTS.md, "Choices"; on compute capability 9.0 TCAuto runs only
// its two transposed weight gradients).
var convTCModules = map[string]*kc.Module{"": kc.ConvTcTf32Module, "rr": kc.ConvTcModule, "rl": kc.ConvTcRlModule}

// convTCShared is the dynamic shared memory of a conv_tc.cu kernel.
func convTCShared(bf16 bool, rows int) int {
	switch {
	case bf16 && rows == 128:
		return convTCSharedBF16x128
	case bf16:
		return convTCSharedBF16x64
	case rows == 128:
		return convTCSharedTF32x128
	}
	return convTCSharedTF32x64
}

// convTCAllowed reports whether the device gives kernel c its shared
// memory, opting it in: a GPU with SharedMemoryOptIn must allow c.shared
// plus the static tables per block and accept the opt-in; one without
// (the CPU emulator) has no limit.
func (be *Backend) convTCAllowed(c convTCKernel) bool {
	s, ok := be.g.(SharedMemoryOptIn)
	if !ok {
		return true
	}
	n, err := s.MaxSharedOptIn()
	return err == nil && n >= c.shared+convTCStatic && s.OptInShared(c.module, c.name, c.shared) == nil
}

// convTCLaunch is the launch configuration of kernel k over an m x n
// product with z blocks along the third dimension.
func convTCLaunch(op string, k convTCKernel, m, n, z int) kc.Config {
	gy := (m + k.rows - 1) / k.rows
	if gy > 65535 {
		must(op, fmt.Errorf("cuda: %d rows exceed the %d of one conv_tc.cu launch (grid limit)", m, 65535*k.rows))
	}
	return kc.Config{
		Grid:   driver.Dim3{X: max((n+convTCTileN-1)/convTCTileN, 1), Y: max(gy, 1), Z: z},
		Block:  driver.Dim3{X: 256, Y: 1, Z: 1},
		Shared: k.shared,
	}
}

// convTCLaunchers are conv_tc.cu's launchers by kernel name, by pass.
var (
	convTCFwd = map[string]func(kc.Launcher, kc.Config, driver.DevicePtr, driver.DevicePtr, driver.DevicePtr, driver.DevicePtr, int32,
		int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32) error{
		"conv_fwd_tc_tf32": kc.ConvFwdTcTf32, "conv_fwd_tc64_tf32": kc.ConvFwdTc64Tf32,
		"conv_fwd_tc_bf16": kc.ConvFwdTcBf16, "conv_fwd_tc64_bf16": kc.ConvFwdTc64Bf16,
		"conv_fwd_tc_tf32rr": kc.ConvFwdTcTf32rr, "conv_fwd_tc64_tf32rr": kc.ConvFwdTc64Tf32rr,
		"conv_fwd_wg_tf32": kc.ConvFwdWgTf32, "conv_fwd_wg64_tf32": kc.ConvFwdWg64Tf32,
		"conv_fwd_tc_tf32rl": kc.ConvFwdTcTf32rl, "conv_fwd_tc64_tf32rl": kc.ConvFwdTc64Tf32rl,
	}
	convTCDgrad = map[string]func(kc.Launcher, kc.Config, driver.DevicePtr, driver.DevicePtr, driver.DevicePtr, int32,
		int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32) error{
		"conv_dgrad_tc_tf32": kc.ConvDgradTcTf32, "conv_dgrad_tc64_tf32": kc.ConvDgradTc64Tf32,
		"conv_dgrad_tc_bf16": kc.ConvDgradTcBf16, "conv_dgrad_tc64_bf16": kc.ConvDgradTc64Bf16,
		"conv_dgrad_tc_tf32rr": kc.ConvDgradTcTf32rr, "conv_dgrad_tc64_tf32rr": kc.ConvDgradTc64Tf32rr,
		"conv_dgrad_wg_tf32": kc.ConvDgradWgTf32, "conv_dgrad_wg64_tf32": kc.ConvDgradWg64Tf32,
		"conv_dgrad_tc_tf32rl": kc.ConvDgradTcTf32rl, "conv_dgrad_tc64_tf32rl": kc.ConvDgradTc64Tf32rl,
	}
	convTCWgrad = map[string]func(kc.Launcher, kc.Config, driver.DevicePtr, driver.DevicePtr, driver.DevicePtr, int32, int32,
		int32, int32, int32, int32, int32, int32, int32, int32, int32, int32, int32) error{
		"conv_wgrad_tc_tf32": kc.ConvWgradTcTf32, "conv_wgrad_tc64_tf32": kc.ConvWgradTc64Tf32,
		"conv_wgrad_tc_bf16": kc.ConvWgradTcBf16, "conv_wgrad_tc64_bf16": kc.ConvWgradTc64Bf16,
		"conv_wgradt_tc_tf32": kc.ConvWgradtTcTf32, "conv_wgradt_tc64_tf32": kc.ConvWgradtTc64Tf32,
		"conv_wgradt_tc_bf16": kc.ConvWgradtTcBf16, "conv_wgradt_tc64_bf16": kc.ConvWgradtTc64Bf16,
		"conv_wgrad_tc_tf32rr": kc.ConvWgradTcTf32rr, "conv_wgrad_tc64_tf32rr": kc.ConvWgradTc64Tf32rr,
		"conv_wgradt_tc_tf32rr": kc.ConvWgradtTcTf32rr, "conv_wgradt_tc64_tf32rr": kc.ConvWgradtTc64Tf32rr,
		"conv_wgrad_wg_tf32": kc.ConvWgradWgTf32, "conv_wgrad_wg64_tf32": kc.ConvWgradWg64Tf32,
		"conv_wgrad_tc_tf32rl": kc.ConvWgradTcTf32rl, "conv_wgrad_tc64_tf32rl": kc.ConvWgradTc64Tf32rl,
	}
)

// convForwardTC runs the forward pass with kernel k (see ConvForward).
func (be *Backend) convForwardTC(op string, k convTCKernel, yp, xp, wp, bp driver.DevicePtr, hasBias bool, s tensor.ConvShape, a [11]int32) {
	cols := s.N * s.OutH() * s.OutW()
	be.queued(op, convTCFwd[k.name](be.g, convTCLaunch(op, k, s.Out, cols, 1), yp, xp, wp, bp, convFlag(hasBias),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
}

// convInputGradTC runs the input gradient with kernel k: conv_wt_f32
// (conv.cu, see convWt) writes w^T' (C x O*K*K) into scratch memory, the A operand of the
// product (a strided convolution takes convInputGradStrided first, where
// it can: ConvInputGrad).
func (be *Backend) convInputGradTC(op string, k convTCKernel, dxp, dyp, wp driver.DevicePtr, acc bool, s tensor.ConvShape, a [11]int32) {
	kk := s.K * s.K
	n := int64(s.Out) * int64(s.In) * int64(kk)
	sc := &scratch{mem: be.mem}
	defer sc.release() // the stream orders later users of the memory after these kernels
	wt, err := sc.alloc(4 * int(n))
	must(op, err)
	be.convWt(op, wt, wp, s.Out, s.In, kk)
	cols := s.N * s.H * s.W
	be.queued(op, convTCDgrad[k.name](be.g, convTCLaunch(op, k, s.In, cols, 1), dxp, dyp, wt, convFlag(acc),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
}

// convTCTileArea is the area the tiles of a kernel of rows-row tiles
// cover on an m x n product: the work it does, useful or not.
func convTCTileArea(rows, m, n int) int {
	return (m + rows - 1) / rows * rows * ((n + convTCTileN - 1) / convTCTileN * convTCTileN)
}

// convWeightGradTC runs the weight gradient with kernel k (conv_wgrad_tc*,
// an O x C*K*K product) or, where its transposed product C*K*K x O covers
// less area with its tiles (few weight columns: ResNet-50's 1 x 1 kernels
// on 64 or 128 channels), with the matching conv_wgradt_tc* kernel; its
// reduction split as conv_wgrad_f32's (chunks of whole panels) and the
// partial products summed by conv_wgrad_reduce_f32.
func (be *Backend) convWeightGradTC(op string, k convTCKernel, dwp, dyp, xp driver.DevicePtr, acc bool, s tensor.ConvShape, a [11]int32) {
	p := s.N * s.OutH() * s.OutW()
	r := s.In * s.K * s.K
	m, n := s.Out, r
	if t, ok := be.convTCTransposed(k, s.Out, r); ok {
		k, m, n = t, r, s.Out
	}
	tiles := ((m + k.rows - 1) / k.rows) * ((n + convTCTileN - 1) / convTCTileN)
	splits, chunk := convTCSplits(p, tiles, be.g.Multiprocessors())
	wgrad := convTCWgrad[k.name]
	if splits <= 1 {
		be.queued(op, wgrad(be.g, convTCLaunch(op, k, m, n, 1), dwp, dyp, xp, convFlag(acc), int32(max(p, 0)),
			a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
		return
	}
	sc := &scratch{mem: be.mem}
	defer sc.release()
	part, err := sc.alloc(4 * splits * s.Out * r)
	must(op, err)
	be.queued(op, wgrad(be.g, convTCLaunch(op, k, m, n, splits), part, dyp, xp, 0, int32(chunk),
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]))
	total := int64(s.Out) * int64(r)
	be.queued(op, kc.ConvWgradReduceF32(be.g, be.grid(total), dwp, part, int32(splits), total, convFlag(acc)))
}

// convTCTransposed returns the conv_wgradt_tc* kernel of the weight
// gradient's transposed product (r x o) when its tiles cover less area
// than those of k, the chosen conv_wgrad_tc* kernel of the o x r product,
// and the device allows it; else ok is false.
func (be *Backend) convTCTransposed(k convTCKernel, o, r int) (convTCKernel, bool) {
	t, ok := be.convTCFor("wgradt", r)
	if !ok || convTCTileArea(t.rows, r, o) >= convTCTileArea(k.rows, o, r) {
		return convTCKernel{}, false
	}
	return t, true
}

// convTCSplits is convSplits for conv_tc.cu's weight gradient: one block
// a multiprocessor (their shared memory allows no more), chunks of whole
// panels of 32 and at least 8 panels each.
func convTCSplits(p, tiles, sms int) (splits, chunk int) {
	splits = min(max(sms/max(tiles, 1), 1), max(p/(8*convTCChunk), 1), 65535)
	chunk = (p + splits - 1) / splits
	chunk = (chunk + convTCChunk - 1) / convTCChunk * convTCChunk
	if chunk == 0 {
		return 1, 0
	}
	return (p + chunk - 1) / chunk, chunk
}

// convWtShared is the shared memory conv_wt_f32's tiles may take: what
// every device gives a block without opting in.
const convWtShared = 48 << 10

// convWt writes wt[c][o*kk + t] = w[o][c][t] for o < outs, c < ins,
// t < kk (conv.cu's conv_wt_f32): tiles of T x T (o, c) pairs, T the
// largest power of two up to 32 whose T*(T*kk+1) floats fit in
// convWtShared.
func (be *Backend) convWt(op string, wt, w driver.DevicePtr, outs, ins, kk int) {
	if outs == 0 || ins == 0 || kk == 0 {
		return
	}
	t := 32
	for t > 1 && 4*t*(t*kk+1) > convWtShared {
		t /= 2
	}
	gy := (outs + t - 1) / t
	if 4*t*(t*kk+1) > convWtShared || gy > 65535 {
		must(op, fmt.Errorf("cuda: conv_wt_f32: %d x %d weights of %d taps exceed its tiles' limits", outs, ins, kk))
	}
	cfg := kc.Config{Grid: driver.Dim3{X: (ins + t - 1) / t, Y: gy, Z: 1}, Block: driver.Dim3{X: 256, Y: 1, Z: 1}, Shared: 4 * t * (t*kk + 1)}
	be.queued(op, kc.ConvWtF32(be.g, cfg, wt, w, int32(outs), int32(ins), int32(kk), int32(t)))
}

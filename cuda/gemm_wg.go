package cuda

import (
	"fmt"

	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// Dynamic shared memory of gemm_wg.cu's products in bytes: WG_SHARED,
// WG3_SHARED, WGM_SHARED, WGM3_SHARED and WGP_SHARED of kernels/cuda/gemm_wg.cu (a
// test reads them there), four stages of 128-byte k rows of a tile's
// operands (128 x 256 for gemm_wg_* and gemm_wgm_*, 192 x 256 for
// gemm_wg3_* and gemm_wgm3_*) plus 1 KiB to align them, and for the
// bulk-copy kernels two 8-byte mbarriers a stage.
const (
	wgShared   = 4*(128+256)*128 + 1024
	wg3Shared  = 4*(192+256)*128 + 1024
	wgmShared  = wgShared + 16*4
	wgm3Shared = wg3Shared + 16*4
	wgpShared  = wgShared + 16 // gemm_wgp_*'s (WGP_SHARED): its packers' claims after the ring
)

// wgPack is the launcher of gemm_wg_pack_* and gemm_wg_packt_*.
type wgPack = func(l kc.Launcher, cfg kc.Config, X driver.DevicePtr, ld, stride int64, kcontig, R, K int32,
	P driver.DevicePtr, Rp, KW, batch int32) error

// wgMul is the launcher of gemm_wg.cu's products.
type wgMul = func(l kc.Launcher, cfg kc.Config, M, N, KW int32, alpha float32, A driver.DevicePtr, strideA int64,
	B driver.DevicePtr, strideB int64, beta float32, C driver.DevicePtr, ldc, strideC int64, batch int32) error

// wgFused is the launcher of gemm_wgp_*: the packing and the product in
// one launch.
type wgFused = func(l kc.Launcher, cfg kc.Config, A driver.DevicePtr, lda, strideA int64, kcontigA, vecA int32,
	B driver.DevicePtr, ldb, strideB int64, kcontigB, vecB int32, M, N, K, KW, RpA, RpB int32, alpha float32,
	Ap, Bp driver.DevicePtr, beta float32, C driver.DevicePtr, ldc, strideC int64, batch int32, sync driver.DevicePtr) error

// wgKernels is one precision's pair of gemm_wg.cu kernels, the k values a
// packed 32-bit word holds (1 for TF32, 2 for BF16), whether the product
// runs on tiled operands (gemm_wg_packt_*) with the grid's x along m, in
// clusters of how many blocks along m (0 or 1: none; 2: the grid's blocks
// along m rounded up to even), and whether its blocks have a producer
// warp after their warpgroups; or, for gemm_wgp_*, the one kernel that
// packs and multiplies (fused; pack and mul nil).
type wgKernels struct {
	pack     wgPack
	mul      wgMul
	perWord  int
	tiled    bool // tiled operands, m along the grid's x
	cluster  int
	producer bool
	fused    wgFused
}

// isWG reports whether c is one of gemm_wg.cu's products (wgChoice).
func (c gemmChoice) isWG() bool { return c.wg.mul != nil || c.wg.fused != nil }

// wgVariants lists gemm_wg.cu's products by TCKernel, each as its TF32
// and its BF16 gemmChoice (name, tile, dynamic shared memory, launchers).
// Their order is that of tcState.ok from index 3 on, two entries each.
var wgVariants = []struct {
	kernel     TCKernel
	tf32, bf16 gemmChoice
}{
	{TCWG,
		gemmChoice{nil, "gemm_wg_tf32", 128, 256, wgShared, wgKernels{kc.GemmWgPackTf32, kc.GemmWgTf32, 1, false, 0, false, nil}},
		gemmChoice{nil, "gemm_wg_bf16", 128, 256, wgShared, wgKernels{kc.GemmWgPackBf16, kc.GemmWgBf16, 2, false, 0, false, nil}}},
	{TCWG3,
		gemmChoice{nil, "gemm_wg3_tf32", 192, 256, wg3Shared, wgKernels{kc.GemmWgPackTf32, kc.GemmWg3Tf32, 1, false, 0, false, nil}},
		gemmChoice{nil, "gemm_wg3_bf16", 192, 256, wg3Shared, wgKernels{kc.GemmWgPackBf16, kc.GemmWg3Bf16, 2, false, 0, false, nil}}},
	{TCWGM,
		gemmChoice{nil, "gemm_wgm_tf32", 128, 256, wgmShared, wgKernels{kc.GemmWgPacktTf32, kc.GemmWgmTf32, 1, true, 2, false, nil}},
		gemmChoice{nil, "gemm_wgm_bf16", 128, 256, wgmShared, wgKernels{kc.GemmWgPacktBf16, kc.GemmWgmBf16, 2, true, 2, false, nil}}},
	{TCWGM3,
		gemmChoice{nil, "gemm_wgm3_tf32", 192, 256, wgm3Shared, wgKernels{kc.GemmWgPacktTf32, kc.GemmWgm3Tf32, 1, true, 2, false, nil}},
		gemmChoice{nil, "gemm_wgm3_bf16", 192, 256, wgm3Shared, wgKernels{kc.GemmWgPacktBf16, kc.GemmWgm3Bf16, 2, true, 2, false, nil}}},
	{TCWGMS,
		gemmChoice{nil, "gemm_wgms_tf32", 128, 256, wgmShared, wgKernels{kc.GemmWgPacktTf32, kc.GemmWgmsTf32, 1, true, 2, true, nil}},
		gemmChoice{nil, "gemm_wgms_bf16", 128, 256, wgmShared, wgKernels{kc.GemmWgPacktBf16, kc.GemmWgmsBf16, 2, true, 2, true, nil}}},
	{TCWGS,
		gemmChoice{nil, "gemm_wgs_tf32", 128, 256, wgmShared, wgKernels{kc.GemmWgPacktTf32, kc.GemmWgsTf32, 1, true, 1, true, nil}},
		gemmChoice{nil, "gemm_wgs_bf16", 128, 256, wgmShared, wgKernels{kc.GemmWgPacktBf16, kc.GemmWgsBf16, 2, true, 1, true, nil}}},
	{TCWGP,
		gemmChoice{nil, "gemm_wgp_tf32", 128, 256, wgpShared, wgKernels{perWord: 1, fused: kc.GemmWgpTf32}},
		gemmChoice{nil, "gemm_wgp_bf16", 128, 256, wgpShared, wgKernels{perWord: 2, fused: kc.GemmWgpBf16}}},
}

// wgChoice returns gemm_wg.cu's kernels of k (TCWG, TCWG3, TCWGM, TCWGM3,
// TCWGMS, TCWGS or TCWGP) for precision p (TF32 or BF16) as a gemmChoice,
// and its index in tcState.ok; ok is false for other kernels.
func wgChoice(p Precision, k TCKernel) (c gemmChoice, i int, ok bool) {
	for v, w := range wgVariants {
		if w.kernel != k {
			continue
		}
		if p == BF16 {
			return w.bf16, 4 + 2*v, true
		}
		return w.tf32, 3 + 2*v, true
	}
	return gemmChoice{}, 0, false
}

// wgAllowed reports whether the backend runs c (wgChoice's, index i of
// tcState.ok): on a device of compute capability 9.0 exactly (the sm_90a
// PTX loads nowhere else; 0, the CPU emulator, runs it too) that gives it
// its shared memory.
func (be *Backend) wgAllowed(c gemmChoice, i int) bool {
	if be.cc != 0 && be.cc != 90 {
		return false
	}
	return be.tc2Allowed(i, c)
}

// gemmWG runs product g with c's kernels (see TCWG): op(A) and op(B)^T
// are packed K-major into scratch memory, rows padded to the tile (128 or
// 192 for A, 256 for B) and k to whole 128-byte rows (KW words), rounded
// and zero-filled, then multiplied into C by blocks of one warpgroup (128
// threads) per 64 rows of the tile.
func (be *Backend) gemmWG(g tensor.GemmArgs, c gemmChoice) {
	kw := (g.K + 32*c.wg.perWord - 1) / (32 * c.wg.perWord) * 32 // words a packed row: a multiple of 32 (128 bytes)
	rpA, rpB := (g.M+c.tileM-1)/c.tileM*c.tileM, (g.N+c.tileN-1)/c.tileN*c.tileN
	if c.wg.cluster > 1 {
		rpA = (g.M + 2*c.tileM - 1) / (2 * c.tileM) * 2 * c.tileM // whole clusters of two tiles along m
	}
	if rpA > 1<<31-1 || rpB > 1<<31-1 {
		must("Gemm", fmt.Errorf("cuda: %d x %d exceeds one %s launch (packed rows beyond 2^31)", g.M, g.N, c.name))
	}
	if !c.wg.tiled && rpA/c.tileM > 65535 {
		must("Gemm", fmt.Errorf("cuda: %d x %d exceeds one %s launch (grid limit: %d rows)", g.M, g.N, c.name, 65535*c.tileM))
	}
	if c.wg.tiled && rpB/c.tileN > 65535 {
		must("Gemm", fmt.Errorf("cuda: %d x %d exceeds one %s launch (grid limit: %d columns)", g.M, g.N, c.name, 65535*c.tileN))
	}
	if c.wg.fused != nil && !wgpFits(g.Batch, kw, rpA, rpB) {
		c, _, _ = wgChoice(be.prec, TCWG) // gemm_wgp_*'s pieces beyond int32: the same tiles in two launches
	}
	s := &scratch{mem: be.mem}
	defer s.release() // after the launches: the cache reuses it later in the stream's order
	pa, err := s.alloc(4 * g.Batch * rpA * kw)
	must("Gemm", err)
	pb, err := s.alloc(4 * g.Batch * rpB * kw)
	must("Gemm", err)
	if c.wg.fused != nil {
		be.gemmWGP(g, c, kw, rpA, rpB, s, pa, pb)
		return
	}
	z := min(g.Batch, 65535)
	pack := func(x tensor.Buffer, off, ld, stride int, kcontig bool, r, rp int, p driver.DevicePtr) {
		cfg := kc.Config{Grid: driver.Dim3{X: kw / 32, Y: rp / 32, Z: z}, Block: driver.Dim3{X: 32, Y: 8, Z: 1}}
		be.queued("Gemm", c.wg.pack(be.g, cfg, be.ptr("Gemm", x, off), int64(ld), int64(stride), b2i(kcontig), int32(r), int32(g.K),
			p, int32(rp), int32(kw), int32(g.Batch)))
	}
	if kw > 0 {
		pack(g.A, g.OffA, g.LDA, g.StrideA, !g.TransA, g.M, rpA, pa) // op(A)(m, k) = A[m*lda + k] unless transposed
		pack(g.B, g.OffB, g.LDB, g.StrideB, g.TransB, g.N, rpB, pb)  // op(B)(k, n) = B[n*ldb + k] when transposed
	}
	threads := 2 * c.tileM // a warpgroup of 128 a 64 rows of the tile
	if c.wg.producer {
		threads += 32 // and the producer warp
	}
	grid := driver.Dim3{X: rpB / c.tileN, Y: rpA / c.tileM, Z: z}
	if c.wg.tiled {
		grid.X, grid.Y = grid.Y, grid.X // blocks along m first: a cluster's two blocks share B's tile
	}
	cfg := kc.Config{
		Grid:   grid,
		Block:  driver.Dim3{X: threads, Y: 1, Z: 1},
		Shared: c.shared,
	}
	be.queued("Gemm", c.wg.mul(be.g, cfg, int32(g.M), int32(g.N), int32(kw), g.Alpha, pa, int64(rpA*kw), pb, int64(rpB*kw),
		g.Beta, be.ptr("Gemm", g.C, g.OffC), int64(g.LDC), int64(g.StrideC), int32(g.Batch)))
}

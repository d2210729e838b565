package cuda

import (
	"github.com/duel-ssl/duel/cuda/driver"
	kc "github.com/duel-ssl/duel/kernels/cuda"
	"github.com/duel-ssl/duel/tensor"
)

// wgpChunk and wgpCountStride are WGP_CHUNK and WGP_COUNT_STRIDE of
// kernels/cuda/gemm_wg.cu (a test reads them there): the 128-byte k-tiles
// of one chunk of gemm_wgp_*'s packing, the unit its products wait for,
// and the int32s from one of its counters to the next (one 128-byte line
// each).
const (
	wgpChunk       = 8
	wgpCountStride = 32
)

// wgpChunks returns the chunks of gemm_wgp_*'s packing in one batch
// element's packed rows of kw words.
func wgpChunks(kw int) int { return (kw + 32*wgpChunk - 1) / (32 * wgpChunk) }

// wgpFits reports whether gemm_wgp_* can number the pieces of a product's
// packing (batch elements, packed rows of kw words, rows padded to rpA
// and rpB) in int32, as it does.
func wgpFits(batch, kw, rpA, rpB int) bool {
	return int64(batch)*int64(wgpChunks(kw))*int64((rpA+rpB)/32) <= 1<<31-1
}

// gemmWGP runs product g with gemm_wgp_* (TCWGP; gemmWG checked wgpFits
// and allocated the packed operands pa and pb in s): one launch of
// 384-thread blocks whose third warpgroup packs op(A) and op(B)^T into pa
// and pb (gemm_wg_pack_*'s layout, kw words a row, rows padded to rpA and
// rpB) in pieces that any running block claims, while the first two
// multiply each 128 x 256 tile as gemm_wg_* does once the chunks of k
// they copy are packed (see kernels/cuda/gemm_wg.cu).
func (be *Backend) gemmWGP(g tensor.GemmArgs, c gemmChoice, kw, rpA, rpB int, s *scratch, pa, pb driver.DevicePtr) {
	chunks := wgpChunks(kw)
	counts := 4 * wgpCountStride * (1 + g.Batch*chunks) // the next piece, then each chunk's pieces done
	sync, err := s.alloc(counts)
	must("Gemm", err)
	must("Gemm", be.g.Zero(sync, counts))
	a, b := be.ptr("Gemm", g.A, g.OffA), be.ptr("Gemm", g.B, g.OffB)
	// vec: the packing may read 16 bytes at a time (every row and batch
	// of the factor starts on 16 bytes).
	vec := func(p driver.DevicePtr, ld, stride int) int32 {
		return b2i(p%16 == 0 && ld%4 == 0 && (g.Batch == 1 || stride%4 == 0))
	}
	cfg := kc.Config{
		Grid:   driver.Dim3{X: rpB / c.tileN, Y: rpA / c.tileM, Z: min(g.Batch, 65535)},
		Block:  driver.Dim3{X: 3 * 128, Y: 1, Z: 1},
		Shared: c.shared,
	}
	be.queued("Gemm", c.wg.fused(be.g, cfg,
		a, int64(g.LDA), int64(g.StrideA), b2i(!g.TransA), vec(a, g.LDA, g.StrideA), // op(A)(m, k) = A[m*lda + k] unless transposed
		b, int64(g.LDB), int64(g.StrideB), b2i(g.TransB), vec(b, g.LDB, g.StrideB), // op(B)(k, n) = B[n*ldb + k] when transposed
		int32(g.M), int32(g.N), int32(g.K), int32(kw), int32(rpA), int32(rpB), g.Alpha, pa, pb,
		g.Beta, be.ptr("Gemm", g.C, g.OffC), int64(g.LDC), int64(g.StrideC), int32(g.Batch), sync))
}

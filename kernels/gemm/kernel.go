package gemm

import (
	"strings"

	"github.com/duel-ssl/duel/internal/cpu"
)

// microKernel computes one mr x nr tile of C from a packed panel of A and a
// panel of B:
//
//	for i < mr, j < nr: c[i*ldc+j] = sum_{p<kc} a[p*mr+i]*b[p*ldb+j] + beta*c[i*ldc+j]
//
// a holds kc*mr floats; b holds kc rows of nr floats with row stride ldb
// (ldb = nr for a packed panel, the stride of B itself when B is read in
// place); c holds mr rows of nr floats with row stride ldc. beta == 0
// overwrites C without reading it (NaNs in C are ignored, as in BLAS).
type microKernel func(kc int, a, b, c *float32, ldb, ldc int, beta float32)

// kernel is one SGEMM variant: a micro-kernel with its register tile
// (mr x nr) and the cache blocking (mc, kc, nc) chosen for it by measurement
// (see the package documentation).
type kernel struct {
	name       string // "avx512", "avx2" or "generic"
	mr, nr     int    // register tile
	mc, kc, nc int    // cache blocks: mc rows of A in L2, kc-deep panels, nc columns of B in L3
	micro      microKernel
	// bInPlace: micro-panels of a non-transposed B may be read in place
	// (rows ldb apart) instead of packed. Measured: as fast as packing or
	// faster with the 32-wide AVX-512 tile, 2x slower with the 16-wide AVX2
	// tile at 1000^3 and 2048^3 (one 64-byte line per row and k step).
	bInPlace bool
	// microDirectA, when not nil, is micro reading A in place: mr rows lda
	// floats apart with contiguous k steps (a non-transposed A), unscaled.
	microDirectA func(kc int, a, b, c *float32, lda, ldb, ldc int, beta float32)
	// narrow, when not nil, is a variant with a shorter tile that Sgemm
	// uses instead when it pads the rows of C less (see forRows).
	narrow *kernel
}

// forRows returns the kernel to use for a product whose C has m rows: kn,
// or its narrow variant when that pads m to at least 1.4 times fewer rows
// (16 rows of C take two 14-row tiles, 28 rows of work, but one 16-row
// tile). Measured on the project machine (one thread): the 16x16 tile runs
// at ~82 GFLOP/s, the 14x32 one at ~100; 16 x 4096 x 144 went from 62 to 82
// GFLOP/s, 32 x 2048 x 288 (ratio 1.31) was a tie.
func (kn *kernel) forRows(m int) *kernel {
	if nk := kn.narrow; nk != nil && 5*ceilDiv(m, kn.mr)*kn.mr > 7*ceilDiv(m, nk.mr)*nk.mr {
		return nk
	}
	return kn
}

// available lists the kernels this build and CPU can run, best first. The
// last one is always the pure-Go kernel. It is set once at package
// initialisation and never changed.
var available = detect()

// active is the kernel Sgemm uses: the best available one not above the
// level internal/cpu decides (cpu.ISA, which reads DUEL_ISA). It is set
// once at package initialisation.
var active = choose(available, cpu.ISA().String())

// choose returns the kernel named by the DUEL_ISA value want ("avx512",
// "avx2" or "generic"). When want is empty, unknown or names a variant this
// CPU (or a noasm build) cannot run, it falls back to the best kernel that
// is not better than the one asked for, so forcing a variant never crashes.
func choose(ks []*kernel, want string) *kernel {
	rank := map[string]int{"generic": 0, "avx2": 1, "avx512": 2, "avx512-16x16": 2}
	r, ok := rank[strings.ToLower(strings.TrimSpace(want))]
	if !ok {
		return ks[0]
	}
	for _, k := range ks {
		if rank[k.name] <= r {
			return k
		}
	}
	return ks[len(ks)-1]
}

// ISA returns the variant Sgemm runs: "avx512", "avx2" or "generic".
func ISA() string { return active.name }

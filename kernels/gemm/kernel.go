package gemm

import "strings"

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
// (mr x nr) and its cache blocking (derived from the caches, or tuned: see
// blocking.go and the package documentation).
type kernel struct {
	name   string // "avx512", "avx512-16x16", "avx2", "neon" or "generic"
	mr, nr int    // register tile
	lanes  int    // float32 lanes of the vectors the tile is made of (1: scalar)
	blocking
	micro microKernel
	// bInPlace: micro-panels of a non-transposed B may be read in place
	// (rows ldb apart) instead of packed: as fast as packing or faster
	// with the 32-wide AVX-512 tile, much slower with the 16-wide AVX2 tile
	// (one 64-byte line per row and k step; bench/RESULTS.md, "Choices").
	bInPlace bool
	// microDirectA, when not nil, is micro reading A in place: mr rows lda
	// floats apart with contiguous k steps (a non-transposed A), unscaled.
	microDirectA func(kc int, a, b, c *float32, lda, ldb, ldc int, beta float32)
	// short, when not nil, holds for r = 1..mr-1 micro reduced to the first
	// r rows of its packed A panel (short[0] is nil): the last rows of C,
	// when mr does not divide m, cost r rows of FMAs instead of mr.
	short []microKernel
	// narrow, when not nil, is a variant with a shorter tile that Sgemm
	// uses instead when it is modelled faster for the rows of C (see forRows).
	narrow *kernel
}

// narrowGain is how much faster the model (rowCost) must find the narrow
// tile before forRows takes it: the model counts FMAs and loads only, not
// the narrow tile's extra packing and edge work. 1.4 keeps the choices
// measured on Zen 4: the 16x16 tile for 16 rows of C, the 14x32 one for
// 32 rows, where the two tie.
const narrowGain = 1.4

// forRows returns the kernel to use for a product whose C has m rows: kn,
// or its narrow variant when the model of the core (rowCost, from the FMA
// units) finds it at least narrowGain times faster for m rows (16 rows of
// C take two 14-row tiles but one 16-row tile).
func (kn *kernel) forRows(m int) *kernel { return kn.forRowsOn(m, machine) }

// forRowsOn is forRows on the CPU hw.
func (kn *kernel) forRowsOn(m int, hw hardware) *kernel {
	if nk := kn.narrow; nk != nil && rowCost(nk, m, hw)*narrowGain <= rowCost(kn, m, hw) {
		return nk
	}
	return kn
}

// withBlocking returns a copy of kn (and of its narrow variant) that uses
// blocking b; the narrow variant keeps its own mc, ns and nc, rounded to
// its tile, and takes b's kc, so that both tiles sum in the same order.
func (kn *kernel) withBlocking(b blocking) *kernel {
	k := *kn
	k.blocking = b
	if kn.narrow != nil {
		nb := derive(kn.narrow.mr, kn.narrow.nr, machine)
		nb.kc = b.kc
		nb.ns = max(kn.narrow.nr, b.ns/kn.narrow.nr*kn.narrow.nr)
		nb.nc = max(nb.ns, b.nc/nb.ns*nb.ns)
		k.narrow = kn.narrow.withBlocking(nb)
	}
	return &k
}

// available lists the kernels this build and CPU can run, best first, with
// the blocking derived for this CPU. The last one is always the pure-Go
// kernel. It is set once at package initialisation and never changed.
var available = withDerived(detect())

// withDerived returns ks with the blocking derived from the caches of this
// CPU (derive) for each.
func withDerived(ks []*kernel) []*kernel {
	out := make([]*kernel, len(ks))
	for i, k := range ks {
		out[i] = k.withBlocking(derive(k.mr, k.nr, machine))
	}
	return out
}

// choose returns the kernel named by the DUEL_ISA value want ("avx512",
// "avx2", "neon" or "generic"). When want is empty, unknown or names a variant this
// CPU (or a noasm build) cannot run, it falls back to the best kernel that
// is not better than the one asked for, so forcing a variant never crashes.
func choose(ks []*kernel, want string) *kernel {
	r, ok := rank(want)
	if !ok {
		return ks[0]
	}
	for _, k := range ks {
		if kr, _ := rank(k.name); kr <= r {
			return k
		}
	}
	return ks[len(ks)-1]
}

// rank orders the kernels and ISA levels by name: generic 0, neon and
// avx2 1 (never on the same CPU), avx512 (either tile) 2, amx 2 (its
// SGEMM is avx512's: the tiles only multiply bfloat16). It reports false
// for an unknown name.
func rank(name string) (int, bool) {
	r, ok := map[string]int{"generic": 0, "neon": 1, "avx2": 1, "avx512": 2, "avx512-16x16": 2, "amx": 2}[strings.ToLower(strings.TrimSpace(name))]
	return r, ok
}

// ISA returns the variant Sgemm runs: "avx512", "avx512-16x16", "avx2",
// "neon" or "generic".
func ISA() string { return active.name }

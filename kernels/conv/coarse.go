package conv

import (
	"runtime"
	"sync/atomic"

	"github.com/duel-ssl/duel/internal/par"
	"github.com/duel-ssl/duel/kernels/gemm"
)

// Coarse-grained parallelism of the convolutions. Instead of letting every
// GEMM split itself over the cores (a fork/join and barriers per call, which
// lose a core whenever another process runs and cost a lot on the small
// GEMMs of deep layers), a convolution splits its batch into chunks of
// images that GOMAXPROCS goroutines claim; each goroutine builds its own
// patch matrix and runs a single-threaded GEMM (gemm.SgemmSerial) on it.

// sgemmFunc is the signature of gemm.Sgemm and gemm.SgemmSerial.
type sgemmFunc func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// chunksPerThread is how many chunks of images each goroutine gets on
// average: two, so that a goroutine slowed down by another process is
// compensated by the others claiming more.
const chunksPerThread = 2

// minCoarseFlops is the size of a convolution GEMM (2*m*n*k over the whole
// batch) below which it runs on the caller's goroutine only.
const minCoarseFlops = 2 * gemm.MinParallelFlops

// coarsePlan returns how to split a batch of n images whose convolution
// costs flops: images per chunk (at most chunk), goroutines, the GEMM to
// call inside a chunk and whether im2col should split itself too. A single
// image (or a single core) keeps the threaded GEMM.
func coarsePlan(n, chunk int, flops float64) (c, threads int, sg sgemmFunc, parIm2col bool) {
	p := runtime.GOMAXPROCS(0)
	if flops < minCoarseFlops {
		return chunk, 1, gemm.SgemmSerial, false
	}
	if p < 2 || n < 2 {
		return chunk, 1, gemm.Sgemm, true
	}
	c = max(1, min(chunk, (n+chunksPerThread*p-1)/(chunksPerThread*p)))
	return c, min(p, (n+c-1)/c), gemm.SgemmSerial, false
}

// sourceGemm returns the gemm.PanelSource form of the GEMM coarsePlan
// chose: the threaded one when it let im2col split itself (par), else the
// serial one.
func sourceGemm(par bool) func(m, n, k int, a []float32, lda int, src gemm.PanelSource, beta float32, c []float32, ldc int) {
	if par {
		return gemm.SgemmSource
	}
	return gemm.SgemmSerialSource
}

// runChunks calls f(w, n0, cnt) for the chunks [n0, n0+cnt) of chunk images
// covering [0, n), on threads goroutines (w is the goroutine's index, for
// its private buffers). When static, goroutine w takes chunks w, w+threads,
// ... (a fixed assignment, for results that must not depend on timing);
// otherwise the goroutines claim chunks in order until none is left.
func runChunks(n, chunk, threads int, static bool, f func(w, n0, cnt int)) {
	if threads <= 1 {
		for n0 := 0; n0 < n; n0 += chunk {
			f(0, n0, min(chunk, n-n0))
		}
		return
	}
	var next atomic.Int32
	work := func(w int) {
		for i := w; ; i += threads {
			if !static {
				i = int(next.Add(1)) - 1
			}
			n0 := i * chunk
			if n0 >= n {
				return
			}
			f(w, n0, min(chunk, n-n0))
		}
	}
	par.Run(threads, work)
}

// scratchSet gets threads buffers of n floats from sc.
func scratchSet(sc Scratch, threads, n int) [][]float32 {
	s := make([][]float32, threads)
	for w := range s {
		s[w] = get(sc, n)
	}
	return s
}

// putScratchSet gives the buffers of s back to sc.
func putScratchSet(sc Scratch, s [][]float32) {
	for _, b := range s {
		put(sc, b)
	}
}

// workers returns how many goroutines to split work of about n scalar
// operations over (par.Workers).
func workers(n int) int { return par.Workers(n) }

// parallelFor splits [0, n) into contiguous chunks run by up to w
// goroutines and waits for them.
func parallelFor(n, w int, f func(lo, hi int)) { par.For(n, w, f) }

// beta returns the GEMM beta that accumulates (1) or overwrites (0).
func beta(acc bool) float32 {
	if acc {
		return 1
	}
	return 0
}

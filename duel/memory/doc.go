// Package memory is the active memory of the DUEL framework and the policies
// that decide which rows it keeps.
//
// A Memory holds up to K feature rows (Z float32 values each, L2-normalised
// on entry) with, per row, the id of the sample it came from, an optional
// label (for metrics only: no policy reads it) and the training step at which
// it entered. Rows are kept in order: position 0 is the oldest survivor.
//
// While the memory is not full, arriving rows are appended. Once it is full,
// each arriving batch goes through a Policy, which says, for each incoming
// row in turn, which row leaves. Policies are registered by name:
// PolicyNames lists them and NewPolicy builds one. Among them:
//
//	duel       Duplicate Elimination (the paper's Definition 3 and Appendix D)
//	fifo       the oldest row leaves (MoCo's queue)
//	random     a uniformly chosen row leaves
//	reservoir  reservoir sampling (Algorithm R) over the whole stream
//
// # The DUEL policy
//
// The mutual duplication probability of two rows is q = (1 + cos)/2 and the
// score of a row is the sum of its q with every row held, itself included.
// The row with the highest score is the most duplicated one (the lowest
// distinctiveness information -log(mean q), Eq. 10); for each incoming row,
// DUEL evicts it, then inserts the new row. See DUEL for the details and the
// two admission modes, duelReference for a line-by-line transcription of the
// paper's pseudocode, and duel_fast.go for the implementation used in
// training.
//
// # Exact scores
//
// The fast DUEL path must make exactly the decisions of the reference, so
// scores must not depend on the order of floating-point sums. They do not:
// before similarities are taken, each component x of a unit row is rounded
// to the integer round(2048*x) (the "similarity grid", see similarity.go).
// Every dot product of two such rows is then an integer below 2^24 in
// magnitude at every partial sum, so float32 SGEMM computes it exactly
// whatever its blocking, FMA use or threading (the reference uses it), as
// does the int16 kernel of kernels/igemm with int32 sums (AVX-512 VNNI or
// AVX2, used by the fast path where the CPU has them), and every q is a multiple of
// 2^-23, so float64 sums of up to 2^29 of them are exact too. Equal inputs
// give bit-identical scores along any computation path. The price is a
// cosine accurate to about 1e-4 for typical rows (at worst sqrt(Z)/2048, for
// rows whose rounding errors all align), like float16 inputs on a GPU's
// tensor cores, and far below anything that matters to a memory policy.
//
// Unlike the rest of duel/..., which reaches the kernels only through a
// tensor backend, this package imports kernels/gemm and kernels/igemm
// directly: the memory policy is a kernel consumer by design, its memory
// staying on the host, where the fast path runs the SGEMM and int16
// kernels on the rows in place.
package memory

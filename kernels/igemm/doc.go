// Package igemm computes exact int16 dot products: C = A * B^T with int16
// inputs and int32 results, for the DUEL memory's similarity grid (see
// duel/memory), whose components are integers of at most 2048 in magnitude.
//
// B is packed once into panels of NR rows (Packed) and can be updated row by
// row, so that a matrix that changes a few rows at a time (the memory's
// slots) is not repacked at every product. A is read in place.
//
// On amd64 CPUs with AVX-512 VNNI the products run in an assembly
// micro-kernel (an 8 x 48 tile of C, VPDPWSSD: 32 int16 multiply-adds into
// int32 per instruction, twice the multiply-adds of a float32 FMA); on CPUs
// with AVX2 only, or when DUEL_ISA (see internal/cpu) is avx2, in an AVX2
// kernel with the same tile and packing (VPMADDWD then VPADDD on ymm);
// elsewhere, in a noasm build, or when DUEL_ISA is generic, a pure-Go kernel
// computes the same integers. Accelerated reports whether an assembly kernel
// runs, Kernel which one. Results are exact as long as no dot product
// overflows int32; the kernels do not check.
//
// Products of at least parallelMACs multiply-adds are split over
// runtime.GOMAXPROCS(0) goroutines, which claim panels of B one at a time.
package igemm

// Package cuda holds duel's CUDA kernels: one .cu file per kernel family
// (elementwise, reduce, sgemm, im2col; gemm_tc: the TF32 and BF16 products
// on tensor cores with mma.sync, compiled for sm_80 only; conv: implicit-GEMM convolution
// passes with a split-K weight gradient summed in order; pool: max pooling
// with device-side indices and adaptive average pooling; batchnorm:
// ghost-group statistics in double, fused residual and ReLU, backward;
// activation: ReLU, add+ReLU and their backward pass with the CPU's bit
// operations; optim: fused SGD, LARS (norms reduced in a fixed order),
// Adam/AdamW and EMA steps in kernels/optim's float64 arithmetic; rows:
// softmax, log-softmax, L2 normalisation and cross-entropy, one block per
// lane; contrastive: InfoNCE's and NT-Xent's rows, a float64 log-sum-exp
// per anchor; losses: BYOL and Barlow Twins; unarygrad, index and linear:
// autograd's unary backward passes, the gather/scatter along an axis and
// the Linear layer's bias passes; topk: each row's k largest, byte-wise
// radix select and a bitonic sort, for kNN; duel: the resident DUEL
// update), the PTX compiled from them for several
// compute capabilities, embedded in generated Go files, and typed
// launchers that check their arguments before anything reaches a device.
// Device code shared by several families lives in headers next to them,
// included with #include "name.cuh": common.cuh holds the block-wide double
// sum (warp shuffles, then shared memory) and the correctly rounded
// products and sums (rn_fmul, rn_dmul, rn_fadd, rn_dadd) of rows,
// contrastive, losses, batchnorm, optim and unarygrad.
//
// The generated files (zz_generated_*.go) are written by
//
//	go run ./kernels/cuda/gen
//
// which runs nvcc (CUDA 11.8) for sm_60, sm_70 and sm_80 (the sm_80 PTX is
// also the forward-compatible one: newer devices JIT it; a file with a
// "// gen: min-arch 80" line only from sm_80 on, one with "// gen:
// min-arch 90" for sm_90 alone), fails on any
// register spill reported by ptxas -v, and stamps every generated file with
// the toolkit version and the SHA-256 of its source and the headers it
// includes (SourceSHA256). They are committed, so building duel needs no
// CUDA toolkit; a plain go test recomputes the hashes and fails when a .cu
// file or a header it includes changed without regenerating.
//
// Kernels run through a Launcher (package github.com/duel-ssl/duel/cuda
// implements it on a device); the loader picks, for each module, the PTX of
// the highest compute capability that loads on the device. See docs/cuda.md.
package cuda

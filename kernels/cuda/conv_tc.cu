// conv_tc.cu: the tensor-core convolutions' *_tf32rr kernels (conv_tc.cuh's
// engine, the factors rounded to TF32 in registers): TCAuto's and TCV3's
// TF32 convolutions, and the transposed weight gradients (conv_wgradt_*)
// that TCV4 and TCWG run too; the strided input gradient by phases
// (conv_dgradp_*). See conv_tc.cuh.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).
// gen: min-arch 80

#include "conv_tc.cuh"

// conv_fwd_tc_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_tc_tf32rr(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<ctc_engine<false, 128, true>>(y, x, w, b, hasBias, CTC_ARGS);
}

// conv_fwd_tc64_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_tc64_tf32rr(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<ctc_engine<false, 64, true>>(y, x, w, b, hasBias, CTC_ARGS);
}

// conv_dgrad_tc_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_tc_tf32rr(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<ctc_engine<false, 128, true>>(dx, dy, wt, accumulate, CTC_ARGS);
}

// conv_dgrad_tc64_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_tc64_tf32rr(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<ctc_engine<false, 64, true>>(dx, dy, wt, accumulate, CTC_ARGS);
}

// conv_wgrad_tc_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_tc_tf32rr(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<ctc_engine<false, 128, true>>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// conv_wgrad_tc64_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_tc64_tf32rr(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<ctc_engine<false, 64, true>>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// conv_wgradt_tc_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgradt_tc_tf32rr(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgradt_tc<false, 128, true>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// conv_wgradt_tc64_tf32 with the factors rounded in registers after each fragment load (tc2_round_frags), not by a pass over each panel; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgradt_tc64_tf32rr(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgradt_tc<false, 64, true>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered (tf32, rounded in registers), wtp from conv_wt_phase_f32, tensor cores, 128 x 256 tiles; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_tc_tf32rr(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<ctc_engine<false, 128, true, false>>(dx, dy, wtp, accumulate, CTC_ARGS, ry, rx, dense);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered (tf32, rounded in registers), wtp from conv_wt_phase_f32, tensor cores, 64 x 256 tiles; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_tc64_tf32rr(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<ctc_engine<false, 64, true, false>>(dx, dy, wtp, accumulate, CTC_ARGS, ry, rx, dense);
}

// conv_tc_rl.cu: the tensor-core convolutions' *_tf32rl kernels
// (conv_tc.cuh's engine, rounding in registers, the gathered operand in
// conv_pass.cuh's lane mapping): TCV4's TF32 convolutions but the
// transposed weight gradient (conv_tc.cu's). See conv_tc.cuh.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).
// gen: min-arch 80

#include "conv_tc.cuh"

// conv_fwd_tc_tf32rr with the B operand gathered in conv_pass.cuh's lane mapping; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_tc_tf32rl(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<ctc_engine<false, 128, true, true>>(y, x, w, b, hasBias, CTC_ARGS);
}

// conv_fwd_tc64_tf32rr with the B operand gathered in conv_pass.cuh's lane mapping; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_tc64_tf32rl(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<ctc_engine<false, 64, true, true>>(y, x, w, b, hasBias, CTC_ARGS);
}

// conv_dgrad_tc_tf32rr with the B operand gathered in conv_pass.cuh's lane mapping; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_tc_tf32rl(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<ctc_engine<false, 128, true, true>>(dx, dy, wt, accumulate, CTC_ARGS);
}

// conv_dgrad_tc64_tf32rr with the B operand gathered in conv_pass.cuh's lane mapping; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_tc64_tf32rl(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<ctc_engine<false, 64, true, true>>(dx, dy, wt, accumulate, CTC_ARGS);
}

// conv_wgrad_tc_tf32rr with the B operand gathered in conv_pass.cuh's lane mapping; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_tc_tf32rl(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<ctc_engine<false, 128, true, true>>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// conv_wgrad_tc64_tf32rr with the B operand gathered in conv_pass.cuh's lane mapping; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_tc64_tf32rl(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<ctc_engine<false, 64, true, true>>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered (tf32, rounded in registers, lane-mapped gathers), wtp from conv_wt_phase_f32, tensor cores, 128 x 256 tiles; CTC_SHARED_TF32_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_tc_tf32rl(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<ctc_engine<false, 128, true, true>>(dx, dy, wtp, accumulate, CTC_ARGS, ry, rx, dense);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered (tf32, rounded in registers, lane-mapped gathers), wtp from conv_wt_phase_f32, tensor cores, 64 x 256 tiles; CTC_SHARED_TF32_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_tc64_tf32rl(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<ctc_engine<false, 64, true, true>>(dx, dy, wtp, accumulate, CTC_ARGS, ry, rx, dense);
}

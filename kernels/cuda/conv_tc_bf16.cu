// conv_tc_bf16.cu: the tensor-core convolutions' *_bf16 kernels
// (conv_tc.cuh's engine, the factors packed to BF16): the backend's
// convolutions in precision bf16. See conv_tc.cuh.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).
// gen: min-arch 80

#include "conv_tc.cuh"

// y[o][p] = sum over r of bf16(w[o][r])*bf16(col[r][p]) (+ b[o]), tensor cores, 128 x 256 tiles; CTC_SHARED_BF16_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_tc_bf16(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<ctc_engine<true, 128, false>>(y, x, w, b, hasBias, CTC_ARGS);
}

// y[o][p] = sum over r of bf16(w[o][r])*bf16(col[r][p]) (+ b[o]), tensor cores, 64 x 256 tiles; CTC_SHARED_BF16_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_fwd_tc64_bf16(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd_pass<ctc_engine<true, 64, false>>(y, x, w, b, hasBias, CTC_ARGS);
}

// dx[c][q] (+)= sum over k of bf16(wt[c][k])*bf16(dycol[k][q]), wt from conv_wt_f32, tensor cores, 128 x 256 tiles; CTC_SHARED_BF16_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_tc_bf16(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<ctc_engine<true, 128, false>>(dx, dy, wt, accumulate, CTC_ARGS);
}

// dx[c][q] (+)= sum over k of bf16(wt[c][k])*bf16(dycol[k][q]), wt from conv_wt_f32, tensor cores, 64 x 256 tiles; CTC_SHARED_BF16_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgrad_tc64_bf16(
    float* dx, const float* dy, const float* wt, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad_pass<ctc_engine<true, 64, false>>(dx, dy, wt, accumulate, CTC_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of bf16(dy[o][p])*bf16(col[r][p]), tensor cores, 128 x 256 tiles; CTC_SHARED_BF16_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_tc_bf16(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<ctc_engine<true, 128, false>>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of bf16(dy[o][p])*bf16(col[r][p]), tensor cores, 64 x 256 tiles; CTC_SHARED_BF16_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgrad_tc64_bf16(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad_pass<ctc_engine<true, 64, false>>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of bf16(col[r][p])*bf16(dy[o][p]) as the product col*dy^T, tensor cores, 128 x 256 tiles (rows r, columns o); CTC_SHARED_BF16_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgradt_tc_bf16(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgradt_tc<true, 128>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of bf16(col[r][p])*bf16(dy[o][p]) as the product col*dy^T, tensor cores, 64 x 256 tiles (rows r, columns o); CTC_SHARED_BF16_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_wgradt_tc64_bf16(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgradt_tc<true, 64>(out, dy, x, accumulate, chunk, CTC_ARGS);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered (bf16), wtp from conv_wt_phase_f32, tensor cores, 128 x 256 tiles; CTC_SHARED_BF16_128 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_tc_bf16(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<ctc_engine<true, 128, false, false>>(dx, dy, wtp, accumulate, CTC_ARGS, ry, rx, dense);
}

// dx (+)= phase (ry, rx) of the input gradient (dense: dx = its C x N*Hp*Wp matrix) at stride S, sum over k of wtp[c][k]*dy gathered (bf16), wtp from conv_wt_phase_f32, tensor cores, 64 x 256 tiles; CTC_SHARED_BF16_64 bytes of dynamic shared memory
extern "C" __global__ void __launch_bounds__(256, 1) conv_dgradp_tc64_bf16(
    float* dx, const float* dy, const float* wtp, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm, int ry, int rx, int dense) {
    conv_dgrad_phase_pass<ctc_engine<true, 64, false, false>>(dx, dy, wtp, accumulate, CTC_ARGS, ry, rx, dense);
}

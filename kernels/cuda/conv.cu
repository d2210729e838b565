// conv.cu: the passes of a 2-d convolution (tensor.ConvBackend) as implicit
// GEMMs over the whole batch: the im2col matrix is never materialised, its
// elements are gathered from the image into shared memory tile by tile.
//
// Geometry: N images of C (In) channels, H x W maps, O (Out) output
// channels, a K x K kernel, stride S, zero padding P, OH x OW output maps.
// x and dx are NCHW, or CNHW when cm != 0; y and dy are CNHW (an
// O x N*OH*OW matrix); w and dw are (O, C, K, K) row-major, i.e. an
// O x C*K*K matrix. With r = (c*K+i)*K+j and p = (n*OH+oy)*OW+ox, the
// virtual im2col matrix is col[r][p] = x[n, c, oy*S+i-P, ox*S+j-P] (0
// outside the image), and
//
//   forward       y  = w * col                (O x C*K*K  by  C*K*K x N*OH*OW)
//   weight grad   dw = dy * col^T             (O x N*OH*OW  by  N*OH*OW x C*K*K)
//   input grad    dx = w^T' * dycol           (C x O*K*K  by  O*K*K x N*H*W)
//
// where dycol[(o*K+i)*K+j][(n*H+y)*W+x] = dy[o, n, (y+P-i)/S, (x+P-j)/S]
// when S divides both numerators and the quotients are inside the output
// (0 otherwise), and w^T'[c][(o*K+i)*K+j] = w[o, c, i, j]: the input
// gradient gathers instead of scattering, so no atomics are needed.
//
// Tiles. Each 256-thread block computes one square tile of the product
// (blockIdx.x: columns, blockIdx.y: rows): 64 x 64 with 16-deep panels and
// a 4 x 4 accumulator tile a thread (conv_*_f32), or, for products of more
// than 64 rows (O, or C for the input gradient; cuda/conv.go chooses),
// 128 x 128 with 8-deep panels and 8 x 8 accumulators a thread
// (conv_*_wide_f32), so that every panel element loaded feeds twice the
// multiply-adds. Both are one template (ConvTile) over one main loop
// (conv_loop): the panels are double-buffered, the next one gathered from
// the image into registers while the current one is multiplied, then
// stored into the other buffer, one barrier a panel; the accumulators are
// read from shared memory four at a time. Accumulation is in float (FMA),
// every output element summing its terms in increasing order of the
// reduction index, so the two tile sizes give the same bits (the
// emulator test checks it). The weight gradient's long reduction
// (N*OH*OW) is split over blockIdx.z into partial products that
// conv_wgrad_reduce sums in a fixed order, so every result is
// deterministic.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#include "common.cuh"

#if !defined(__CUDACC__) && !defined(__align__)
#define __align__(n) __attribute__((aligned(n)))  // the CPU emulator's spelling of the alignment
#endif

// LD4 reads v[0..3] from p, 16-byte aligned shared memory (one vector load
// on the device).
#ifdef __CUDACC__
#define LD4(v, p)                                                        \
    do {                                                                 \
        const float4 t4 = *reinterpret_cast<const float4*>(p);           \
        (v)[0] = t4.x, (v)[1] = t4.y, (v)[2] = t4.z, (v)[3] = t4.w;      \
    } while (0)
#else
#define LD4(v, p) ((v)[0] = (p)[0], (v)[1] = (p)[1], (v)[2] = (p)[2], (v)[3] = (p)[3])
#endif

// ConvTile is a block's tiling: E x E output tiles, D-deep panels, R x R
// accumulators a thread (R = 4 or 8), 256 threads as 16 x 16 (tx, ty).
// A panel is E x D elements of each operand: four a thread.
template <int E, int D, int R>
struct ConvTile {
    static constexpr int P = E + 4;  // padded panel row: 16-byte aligned, stores mostly conflict-free
    static_assert(E * D == 1024, "four panel elements a thread");
    static_assert(R * 16 == E, "16 x 16 threads cover the tile");
    // at is the tile row (t = ty) or column (t = tx) of a thread's i-th
    // accumulator row or column: four consecutive, then (R = 8) the same
    // 64 further on.
    static __device__ __forceinline__ int at(int t, int i) { return (i & 4) * 16 + t * 4 + (i & 3); }
    // The l-th panel element a thread gathers: in the A panel (E rows x D
    // columns) row am, column ak (consecutive threads along k, which is
    // contiguous in w and dy); in the B panel (D rows x E columns) row bk,
    // column tid % E (consecutive threads along the product's columns).
    // (Unsigned arithmetic: powers of two become masks and shifts.)
    static __device__ __forceinline__ int ak(int tid, int l) { return (unsigned)(tid + 256 * l) % D; }
    static __device__ __forceinline__ int am(int tid, int l) { return (unsigned)(tid + 256 * l) / D; }
    static __device__ __forceinline__ int bk(int tid, int l) { return (unsigned)tid / E + (256 / E) * l; }
    static __device__ __forceinline__ int bn(int tid) { return (unsigned)tid % E; }
};

typedef ConvTile<64, 16, 4> Narrow;
typedef ConvTile<128, 8, 8> Wide;

// conv_loop runs the panels k0 = kbeg, kbeg + D, ... < kend into acc:
// fill(buf, k) writes panel k's row decomposition into buffer buf (threads
// tid < D), gather(buf, k, a, b) reads a thread's four A and B elements of
// panel k with decomposition buf.
template <class T, int E, int D, int R, class Fill, class Gather>
__device__ __forceinline__ void conv_loop(float (*As)[D][E + 4], float (*Bs)[D][E + 4], float (&acc)[R][R],
                                          int kbeg, int kend, Fill fill, Gather gather) {
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int j = 0; j < R; j++) acc[i][j] = 0.f;
    float ga[4], gb[4];
    const auto store = [&](int s) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            As[s][T::ak(tid, l)][T::am(tid, l)] = ga[l];
            Bs[s][T::bk(tid, l)][T::bn(tid)] = gb[l];
        }
    };
    fill(0, kbeg);
    __syncthreads();
    gather(0, kbeg, ga, gb);
    store(0);
    fill(1, kbeg + D);
    __syncthreads();
    int s = 0;
    for (int k0 = kbeg; k0 < kend; k0 += D) {
        const bool more = k0 + D < kend;
        if (more) gather(s ^ 1, k0 + D, ga, gb);
#pragma unroll
        for (int kk = 0; kk < D; kk++) {
            float ra[R], rb[R];
#pragma unroll
            for (int h = 0; h < R; h += 4) {
                LD4(ra + h, &As[s][kk][T::at(ty, h)]);
                LD4(rb + h, &Bs[s][kk][T::at(tx, h)]);
            }
#pragma unroll
            for (int i = 0; i < R; i++)
#pragma unroll
                for (int j = 0; j < R; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        if (more) {
            store(s ^ 1);
            fill(s, k0 + 2 * D);
        }
        __syncthreads();
        s ^= 1;
    }
}

// conv_fwd is conv_fwd_f32 and conv_fwd_wide_f32.
template <class T, int E, int D, int R>
__device__ __forceinline__ void conv_fwd(float* y, const float* x, const float* w, const float* b, int hasBias,
                                         int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ __align__(16) float As[2][D][E + 4];
    __shared__ __align__(16) float Bs[2][D][E + 4];
    __shared__ int rowI[2][D], rowJ[2][D];
    __shared__ long long rowOff[2][D];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * E, n0 = blockIdx.x * E;
    const int KK = K * K, Rn = C * KK, plane = OH * OW, cols = N * plane;
    // The image column this thread gathers for every panel: x[colBase +
    // rowOff[kb]] when the tap lands inside the image.
    const int gn = n0 + T::bn(tid);
    int iy0 = 1 << 29, ix0 = 0;  // outside the image when gn >= cols
    long long colBase = 0;
    if (gn < cols) {
        int img = gn / plane, q = gn - img * plane, oy = q / OW, ox = q - oy * OW;
        iy0 = oy * S - P, ix0 = ox * S - P;
        colBase = (cm ? (long long)img * H * W : (long long)img * C * H * W) + (long long)iy0 * W + ix0;
    }
    const long long cstride = cm ? (long long)N * H * W : (long long)H * W;
    // The panel's rows r = (c, i, j), decomposed once per block: the tap
    // (i, j) and the offset c*cstride + i*W + j.
    const auto fill = [&](int buf, int k) {
        if (tid < D) {
            int r = k + tid, i = 1 << 29, j = 0;
            long long off = 0;
            if (r < Rn) {
                int c = r / KK, t = r - c * KK;
                i = t / K, j = t - i * K;
                off = c * cstride + (long long)i * W + j;
            }
            rowI[buf][tid] = i, rowJ[buf][tid] = j, rowOff[buf][tid] = off;
        }
    };
    const auto gather = [&](int buf, int k0, float* ga, float* gb) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            // w panel: row m0+am, column k0+ak.
            int gm = m0 + T::am(tid, l), gk = k0 + T::ak(tid, l);
            ga[l] = (gm < O && gk < Rn) ? w[(long long)gm * Rn + gk] : 0.f;
            // col panel: row k0+kb, column gn.
            int kb = T::bk(tid, l);
            int yy = iy0 + rowI[buf][kb], xx = ix0 + rowJ[buf][kb];
            gb[l] = ((unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W) ? x[colBase + rowOff[buf][kb]] : 0.f;
        }
    };
    float acc[R][R];
    conv_loop<T, E, D, R>(As, Bs, acc, 0, Rn, fill, gather);
#pragma unroll
    for (int i = 0; i < R; i++) {
        int gm = m0 + T::at(ty, i);
        if (gm >= O) continue;
        float bias = hasBias ? b[gm] : 0.f;
#pragma unroll
        for (int j = 0; j < R; j++) {
            int c = n0 + T::at(tx, j);
            if (c < cols) y[(long long)gm * cols + c] = acc[i][j] + bias;
        }
    }
}

// conv_dgrad is conv_dgrad_f32 and conv_dgrad_wide_f32.
template <class T, int E, int D, int R>
__device__ __forceinline__ void conv_dgrad(float* dx, const float* dy, const float* w, int accumulate,
                                           int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ __align__(16) float As[2][D][E + 4];
    __shared__ __align__(16) float Bs[2][D][E + 4];
    __shared__ int rowI[2][D], rowJ[2][D];
    __shared__ long long rowO[2][D], rowW[2][D];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * E, n0 = blockIdx.x * E;
    const int KK = K * K, Rn = O * KK, plane = H * W, cols = N * plane, oplane = OH * OW;
    // The image position this thread gathers dy for in every panel.
    const int gn = n0 + T::bn(tid);
    int py = -(1 << 29), px = 0;  // no output position when gn >= cols
    long long base = 0;
    if (gn < cols) {
        int img = gn / plane, q = gn - img * plane, yy = q / W, xx = q - yy * W;
        py = yy + P, px = xx + P;
        base = (long long)img * oplane;
    }
    // The panel's rows k = (o, i, j), decomposed once per block: the tap,
    // o's plane of dy and o's kernel (i, j) in w.
    const auto fill = [&](int buf, int k) {
        if (tid < D) {
            int r = k + tid, i = 1 << 29, j = 0;
            long long ob = 0, wb = 0;
            if (r < Rn) {
                int o = r / KK, t = r - o * KK;
                i = t / K, j = t - i * K;
                ob = (long long)o * N * oplane, wb = (long long)o * C * KK + t;
            }
            rowI[buf][tid] = i, rowJ[buf][tid] = j, rowO[buf][tid] = ob, rowW[buf][tid] = wb;
        }
    };
    const auto gather = [&](int buf, int k0, float* ga, float* gb) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            // w^T' panel: row m0+am (input channel), column k0+ak = (o, i, j).
            int kk = T::ak(tid, l), gm = m0 + T::am(tid, l), gk = k0 + kk;
            ga[l] = (gm < C && gk < Rn) ? w[rowW[buf][kk] + (long long)gm * KK] : 0.f;
            // dycol panel: row k0+kb = (o, i, j), column gn.
            int kb = T::bk(tid, l);
            int sy = py - rowI[buf][kb], sx = px - rowJ[buf][kb];
            float v = 0.f;
            if (sy >= 0 && sx >= 0) {
                int oy = sy, ox = sx;
                if (S != 1) {
                    oy = sy / S, ox = sx / S;
                    if (oy * S != sy || ox * S != sx) oy = OH;  // no output position: skip
                }
                if (oy < OH && ox < OW) v = dy[rowO[buf][kb] + base + (long long)oy * OW + ox];
            }
            gb[l] = v;
        }
    };
    float acc[R][R];
    conv_loop<T, E, D, R>(As, Bs, acc, 0, Rn, fill, gather);
#pragma unroll
    for (int j = 0; j < R; j++) {
        int gn2 = n0 + T::at(tx, j);
        if (gn2 >= cols) continue;
        int img = gn2 / plane, q = gn2 - img * plane;
#pragma unroll
        for (int i = 0; i < R; i++) {
            int c = m0 + T::at(ty, i);
            if (c >= C) continue;
            long long at = cm ? ((long long)c * N + img) * plane + q : ((long long)img * C + c) * plane + q;
            float v = acc[i][j];
            if (accumulate) v += dx[at];
            dx[at] = v;
        }
    }
}

// conv_wgrad is conv_wgrad_f32 and conv_wgrad_wide_f32.
template <class T, int E, int D, int R>
__device__ __forceinline__ void conv_wgrad(float* out, const float* dy, const float* x, int accumulate, int chunk,
                                           int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ __align__(16) float As[2][D][E + 4];
    __shared__ __align__(16) float Bs[2][D][E + 4];
    __shared__ int rowY[2][D], rowX[2][D];
    __shared__ long long rowOff[2][D];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * E, n0 = blockIdx.x * E;
    const int KK = K * K, Rn = C * KK, plane = OH * OW, cols = N * plane;
    const int kbeg = blockIdx.z * chunk, kend = kbeg + chunk < cols ? kbeg + chunk : cols;
    float* o = out + (long long)blockIdx.z * O * Rn;
    // The weight column (c, i, j) this thread gathers for every panel:
    // x[rowOff[kb] + colOff] when the tap lands inside the image.
    const int gn = n0 + T::bn(tid);
    const long long cstride = cm ? (long long)N * H * W : (long long)H * W;
    const long long istride = cm ? (long long)H * W : (long long)C * H * W;
    int ri = 1 << 29, rj = 0;  // outside the image when gn >= Rn
    long long colOff = 0;
    if (gn < Rn) {
        int ci = gn / KK, t = gn - ci * KK;
        ri = t / K - P, rj = t - (t / K) * K - P;
        colOff = ci * cstride + (long long)ri * W + rj;
    }
    // The panel's rows p = (n, oy, ox), decomposed once per block.
    const auto fill = [&](int buf, int k) {
        if (tid < D) {
            int p = k + tid, yv = 1 << 29, x0 = 0;
            long long off = 0;
            if (p < kend) {
                int img = p / plane, q = p - img * plane, oy = q / OW, ox = q - oy * OW;
                yv = oy * S, x0 = ox * S;
                off = img * istride + (long long)yv * W + x0;
            }
            rowY[buf][tid] = yv, rowX[buf][tid] = x0, rowOff[buf][tid] = off;
        }
    };
    const auto gather = [&](int buf, int k0, float* ga, float* gb) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            // dy panel: row m0+am (output channel), column k0+ak (output position).
            int gm = m0 + T::am(tid, l), gk = k0 + T::ak(tid, l);
            ga[l] = (gm < O && gk < kend) ? dy[(long long)gm * cols + gk] : 0.f;
            // col^T panel: row k0+kb (output position), column gn (c, i, j).
            int kb = T::bk(tid, l);
            int yy = rowY[buf][kb] + ri, xx = rowX[buf][kb] + rj;
            gb[l] = ((unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W) ? x[rowOff[buf][kb] + colOff] : 0.f;
        }
    };
    float acc[R][R];
    conv_loop<T, E, D, R>(As, Bs, acc, kbeg, kend, fill, gather);
#pragma unroll
    for (int i = 0; i < R; i++) {
        int gm = m0 + T::at(ty, i);
        if (gm >= O) continue;
#pragma unroll
        for (int j = 0; j < R; j++) {
            int c = n0 + T::at(tx, j);
            if (c >= Rn) continue;
            float* q = o + (long long)gm * Rn + c;
            float v = acc[i][j];
            if (accumulate) v += *q;
            *q = v;
        }
    }
}

#define CONV_GEOM_ARGS N, C, H, W, O, K, S, P, OH, OW, cm

// y[o][p] = sum over r of w[o][r]*col[r][p] (+ b[o] when hasBias), 64 x 64 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) conv_fwd_f32(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd<Narrow, 64, 16, 4>(y, x, w, b, hasBias, CONV_GEOM_ARGS);
}

// y[o][p] = sum over r of w[o][r]*col[r][p] (+ b[o] when hasBias), 128 x 128 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256, 2) conv_fwd_wide_f32(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_fwd<Wide, 128, 8, 8>(y, x, w, b, hasBias, CONV_GEOM_ARGS);
}

// dx[c][q] (+)= sum over (o,i,j) of w[o][c][i][j]*dycol[(o*K+i)*K+j][q], q = (n*H+y)*W+x, 64 x 64 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) conv_dgrad_f32(
    float* dx, const float* dy, const float* w, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad<Narrow, 64, 16, 4>(dx, dy, w, accumulate, CONV_GEOM_ARGS);
}

// dx[c][q] (+)= sum over (o,i,j) of w[o][c][i][j]*dycol[(o*K+i)*K+j][q], 128 x 128 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256, 2) conv_dgrad_wide_f32(
    float* dx, const float* dy, const float* w, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_dgrad<Wide, 128, 8, 8>(dx, dy, w, accumulate, CONV_GEOM_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of dy[o][p]*col[r][p], 64 x 64 tiles per 256-thread block, chunks over blockIdx.z
extern "C" __global__ void __launch_bounds__(256) conv_wgrad_f32(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad<Narrow, 64, 16, 4>(out, dy, x, accumulate, chunk, CONV_GEOM_ARGS);
}

// out[z][o][r] (+)= sum over p in chunk z of dy[o][p]*col[r][p], 128 x 128 tiles per 256-thread block, chunks over blockIdx.z
extern "C" __global__ void __launch_bounds__(256, 2) conv_wgrad_wide_f32(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    conv_wgrad<Wide, 128, 8, 8>(out, dy, x, accumulate, chunk, CONV_GEOM_ARGS);
}

// dw[e] (+)= sum over z < splits of part[z*n + e], in order of z
extern "C" __global__ void conv_wgrad_reduce_f32(float* dw, const float* part, int splits, long long n, int accumulate) {
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (int z = 0; z < splits; z++) s += part[z * n + e];
        if (accumulate) s += dw[e];
        dw[e] = s;
    }
}

// db[o] += sum over p < len of dy[o*len + p], one block per row (grid-stride), blockDim a multiple of 32
extern "C" __global__ void conv_bias_grad_f32(float* db, const float* dy, int rows, long long len) {
    __shared__ double part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = dy + (long long)r * len;
        double acc = 0.0;
        for (long long j = threadIdx.x; j < len; j += blockDim.x) acc += (double)row[j];
        for (int s = 16; s > 0; s >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, s);
        if (lane == 0) part[warp] = acc;
        __syncthreads();
        if (warp == 0) {
            acc = lane < nwarps ? part[lane] : 0.0;
            for (int s = 16; s > 0; s >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, s);
            if (lane == 0) db[r] = (float)((double)db[r] + acc);
        }
        __syncthreads();
    }
}

// wt[c][o*KK + t] = w[o][c][t] for o < O, c < C, t < KK (the tensor-core input gradient's A operand; KK = 1: wt = w^T, the strided input gradient's), a T x T tile of (o, c) per block through T*(T*KK+1) floats of dynamic shared memory, 256 threads
extern "C" __global__ void __launch_bounds__(256) conv_wt_f32(float* wt, const float* w, int O, int C, int KK, int T) {
    // Block (x, y) moves the pairs o0 <= o < o0+T, c0 <= c < c0+T. The
    // tile holds row oi = o - o0 as w holds it (its T*KK floats for
    // c0..c0+T, read contiguously by a warp) at a pitch of T*KK+1 floats:
    // column reads at a stride of one row land in other banks. Each warp
    // then writes rows of wt, contiguous too.
    DYNAMIC_SHARED(float, tile);
    const int pitch = T * KK + 1;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int o0 = blockIdx.y * T, c0 = blockIdx.x * T;
    const int to = O - o0 < T ? O - o0 : T, tc = C - c0 < T ? C - c0 : T;
    for (int oi = warp; oi < to; oi += warps) {
        const float* src = w + ((long long)(o0 + oi) * C + c0) * KK;
        for (int r = lane; r < tc * KK; r += 32) tile[oi * pitch + r] = src[r];
    }
    __syncthreads();
    for (int ci = warp; ci < tc; ci += warps) {
        float* dst = wt + ((long long)(c0 + ci) * O + o0) * KK;
        for (int r = lane; r < to * KK; r += 32) {
            const int oi = r / KK;
            dst[r] = tile[oi * pitch + ci * KK + (r - oi * KK)];
        }
    }
}

// wt[c][(o*Ku + u)*Kv + v] = w[o][c][ry + S*u][rx + S*v] for c < C, o < O, u < Ku, v < Kv: phase (ry, rx)'s taps, the A operand of conv_pass.cuh's conv_dgrad_phase_pass; grid-stride, any block
extern "C" __global__ void conv_wt_phase_f32(float* wt, const float* w, int O, int C, int K, int S, int ry, int rx, int Ku, int Kv) {
    const int KK = Ku * Kv, OKK = O * KK, n = C * OKK;  // the weights' count: below 2^31
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
        const int c = e / OKK, r = e - c * OKK, o = r / KK, t = r - o * KK, u = t / Kv, v = t - u * Kv;
        wt[e] = w[((long long)(o * C + c) * K + ry + S * u) * K + rx + S * v];
    }
}

// col2im_elems is conv_col2im_f32 over the n elements of dx with index
// type I: unsigned where dx and dcol hold fewer than 2^31 elements (three
// 32-bit divisions an element where 64-bit ones cost several times more),
// else long long. The taps (i, j) with S dividing y+P-i and x+P-j are
// walked directly, from (y+P) % S and (x+P) % S in steps of S, in
// increasing order as before.
template <typename I>
__device__ __forceinline__ void col2im_elems(float* dx, const float* dcol, int accumulate, I n, int N, int C, int H, int W,
                                             int K, int S, int P, int OH, int OW, int cm) {
    const I cols = (I)N * OH * OW;
    const I step = (I)gridDim.x * blockDim.x;
    for (I e = (I)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += step) {
        const I t = e / W;
        const int x = (int)(e - t * W);
        const I u = t / H;
        const int y = (int)(t - u * H);
        const I q = u / (cm ? N : C);  // c (cm) or img
        const int r = (int)(u - q * (cm ? N : C));
        const int c = cm ? (int)q : r, img = cm ? r : (int)q;
        float v = 0.f;
        for (int i = (y + P) % S; i < K; i += S) {
            const int ty = y + P - i;
            if (ty < 0) break;  // ty falls as i rises
            if (ty / S >= OH) continue;
            const I row = ((I)img * OH + ty / S) * OW;
            for (int j = (x + P) % S; j < K; j += S) {
                const int tx = x + P - j;
                if (tx < 0) break;
                if (tx / S >= OW) continue;
                v += dcol[((I)(c * K + i) * K + j) * cols + row + tx / S];
            }
        }
        dx[e] = accumulate ? dx[e] + v : v;
    }
}

// col2im_sum is element (y, x)'s sum of conv_col2im_f32, for at most T
// taps a side (T >= ceil(K / S)), from col = dcol at its channel's first
// row and its image's first output position: every tap's load issued
// before the first sum (the generic loop waits on each load in turn), the
// taps outside the kernel or the output read as +0, which leaves a sum
// that starts at +0 unchanged, so the bits are the generic loop's.
template <int T>
__device__ __forceinline__ float col2im_sum(const float* __restrict__ col, long long cols, int K, int S, int P, int OH,
                                            int OW, int y, int x) {
    const int iy = (y + P) % S, jx = (x + P) % S;
    float t[T][T];
#pragma unroll
    for (int u = 0; u < T; u++) {
        const int i = iy + S * u, ty = y + P - i;
        const bool row = i < K && ty >= 0 && ty / S < OH;
#pragma unroll
        for (int v = 0; v < T; v++) {
            const int j = jx + S * v, tx = x + P - j;
            const bool ok = row && j < K && tx >= 0 && tx / S < OW;
            t[u][v] = ok ? col[(long long)(i * K + j) * cols + (ty / S) * OW + tx / S] : 0.f;
        }
    }
    float v = 0.f;
#pragma unroll
    for (int u = 0; u < T; u++) {
#pragma unroll
        for (int w = 0; w < T; w++) v += t[u][w];
    }
    return v;
}

// col2im_planes is conv_col2im_taps<T>_f32 (below).
template <int T>
__device__ __forceinline__ void col2im_planes(float* __restrict__ dx, const float* __restrict__ dcol, int accumulate, int N,
                                              int C, int H, int W, int K, int S, int P, int OH, int OW, int cm) {
    const int hw = H * W, e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= hw) return;
    const int y = e / W, x = e - y * W;
    const long long cols = (long long)N * OH * OW;
    for (int q = blockIdx.y; q < N * C; q += gridDim.y) {
        const int c = cm ? q / N : q % C, img = cm ? q % N : q / C;
        const float v = col2im_sum<T>(dcol + (long long)c * K * K * cols + (long long)img * OH * OW, cols, K, S, P, OH, OW, y, x);
        float* d = dx + (long long)q * hw + e;
        *d = accumulate ? *d + v : v;
    }
}

// conv_col2im_taps<T>_f32: conv_col2im_f32's sums, bit for bit, where a
// phase has at most T taps a side (ceil(K / S) <= T: 1 for 1 x 1 at stride
// 2, 2 for 3 x 3 at 2 and 5 x 5 at 3, 4 for 7 x 7 at 2) and H*W and N*C are
// below 2^31: a thread a map position (x = blockIdx.x * blockDim.x +
// threadIdx.x < H*W), the planes (dx's c, n pairs in its layout) from
// blockIdx.y in steps of gridDim.y; one division a thread instead of three
// an element, and T*T loads in flight. One kernel a T, so that the small
// ones keep their few registers (gen parses each signature: no macro).
// dx (+)= conv_col2im_f32's sums, the same bits, for ceil(K/S) <= 1: a thread a position of the H*W map (blockIdx.x*blockDim.x + threadIdx.x), planes q = blockIdx.y + k*gridDim.y < N*C
extern "C" __global__ void __launch_bounds__(256) conv_col2im_taps1_f32(float* dx, const float* dcol, int accumulate, int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    col2im_planes<1>(dx, dcol, accumulate, N, C, H, W, K, S, P, OH, OW, cm);
}

// dx (+)= conv_col2im_f32's sums, the same bits, for ceil(K/S) <= 2: a thread a position of the H*W map (blockIdx.x*blockDim.x + threadIdx.x), planes q = blockIdx.y + k*gridDim.y < N*C
extern "C" __global__ void __launch_bounds__(256) conv_col2im_taps2_f32(float* dx, const float* dcol, int accumulate, int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    col2im_planes<2>(dx, dcol, accumulate, N, C, H, W, K, S, P, OH, OW, cm);
}

// dx (+)= conv_col2im_f32's sums, the same bits, for ceil(K/S) <= 3: a thread a position of the H*W map (blockIdx.x*blockDim.x + threadIdx.x), planes q = blockIdx.y + k*gridDim.y < N*C
extern "C" __global__ void __launch_bounds__(256) conv_col2im_taps3_f32(float* dx, const float* dcol, int accumulate, int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    col2im_planes<3>(dx, dcol, accumulate, N, C, H, W, K, S, P, OH, OW, cm);
}

// dx (+)= conv_col2im_f32's sums, the same bits, for ceil(K/S) <= 4: a thread a position of the H*W map (blockIdx.x*blockDim.x + threadIdx.x), planes q = blockIdx.y + k*gridDim.y < N*C
extern "C" __global__ void __launch_bounds__(256) conv_col2im_taps4_f32(float* dx, const float* dcol, int accumulate, int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    col2im_planes<4>(dx, dcol, accumulate, N, C, H, W, K, S, P, OH, OW, cm);
}

// phase_len returns how many of an axis's n positions have (y + P) mod
// S = r, and in t0 the least t >= 0 with S*t + r - P >= 0 (the first of
// them is S*t0 + r - P): cuda/conv_phase.go's convPhaseLen.
__device__ __forceinline__ int phase_len(int r, int S, int P, int n, int& t0) {
    t0 = P > r ? (P - r + S - 1) / S : 0;
    const int end = n + P - r > 0 ? (n + P - r + S - 1) / S : 0;
    return end > t0 ? end - t0 : 0;
}

// dx[c][n][y][x] (cm; else dx[n][c][y][x]) (+)= ph's element of (y, x): phase (ry, rx) = ((y+P) mod S, (x+P) mod S) at its block of ph (the phases' C x N*Hp*Wp matrices in row-major (ry, rx) order, conv_dgradp_*'s dense output), row c, column (n*Hp + ty)*Wp + tx, or 0 where the phase has no tap (ry >= K or rx >= K); a thread a map position, the planes from blockIdx.y in steps of gridDim.y
extern "C" __global__ void __launch_bounds__(256) conv_phase_gather_f32(float* dx, const float* ph, int accumulate, int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    const int hw = H * W, e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= hw) return;
    const int y = e / W, x = e - y * W, ry = (y + P) % S, rx = (x + P) % S;
    int t0y, t0x, t;
    const int hp = phase_len(ry, S, P, H, t0y), wp = phase_len(rx, S, P, W, t0x);
    int rows = 0, cols = 0;  // the positions of the rows' residues before ry, of the columns' before rx
    for (int a = 0; a < ry; a++) rows += phase_len(a, S, P, H, t);
    for (int b = 0; b < rx; b++) cols += phase_len(b, S, P, W, t);
    const long long pplane = (long long)hp * wp, block = (long long)N * C * ((long long)rows * W + (long long)hp * cols);
    const int within = ((y + P - ry) / S - t0y) * wp + (x + P - rx) / S - t0x;
    const bool taps = ry < K && rx < K;
    for (int q = blockIdx.y; q < N * C; q += gridDim.y) {
        const int c = cm ? q / N : q % C, img = cm ? q % N : q / C;
        const float v = taps ? ph[block + (long long)c * N * pplane + img * pplane + within] : 0.f;
        float* d = dx + (long long)q * hw + e;
        *d = accumulate ? *d + v : v;
    }
}

// dx[c][n][y][x] (cm; else dx[n][c][y][x]) (+)= sum over taps (i, j) with S dividing y+P-i and x+P-j, the quotients (oy, ox) inside the output, of dcol[(c*K+i)*K+j][(n*OH+oy)*OW+ox], in increasing (i, j), in float: the strided input gradient's taps gathered from dcol = w^T * dy (a C*K*K x N*OH*OW product), one thread an element, grid-stride
extern "C" __global__ void conv_col2im_f32(float* dx, const float* dcol, int accumulate,
                                           int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW,
                                           int cm) {
    const long long n = (long long)N * C * H * W, ncol = (long long)C * K * K * N * OH * OW;
    if (n < 0x80000000LL && ncol < 0x80000000LL)
        col2im_elems<unsigned>(dx, dcol, accumulate, (unsigned)n, N, C, H, W, K, S, P, OH, OW, cm);
    else
        col2im_elems<long long>(dx, dcol, accumulate, n, N, C, H, W, K, S, P, OH, OW, cm);
}

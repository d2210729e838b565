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
// Each 256-thread block computes a 64 x 64 tile of the product (blockIdx.x:
// columns, blockIdx.y: rows), staging 16-deep panels of both operands in
// shared memory; each thread accumulates a 4 x 4 sub-tile in registers,
// rows ty + 16*i and columns tx + 16*j, as sgemm.cu. Accumulation is in
// float (FMA). The weight gradient's long reduction (N*OH*OW) is split
// over blockIdx.z into partial products that conv_wgrad_reduce sums in a
// fixed order, so every result is deterministic.
//
// Build: go run ./kernels/cuda/gen (see docs/cuda.md).

#define CT 64  // tile edge
#define CD 16  // panel depth

// The 4 x 4 register tile update from one panel pair.
__device__ __forceinline__ void conv_tile_mac(float (*As)[CT + 1], float (*Bs)[CT + 1], float acc[4][4], int tx, int ty) {
#pragma unroll
    for (int kk = 0; kk < CD; kk++) {
        float ra[4], rb[4];
#pragma unroll
        for (int i = 0; i < 4; i++) ra[i] = As[kk][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; j++) rb[j] = Bs[kk][tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
}

// y[o][p] = sum over r of w[o][r]*col[r][p] (+ b[o] when hasBias), 64 x 64 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) conv_fwd_f32(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ float As[CD][CT + 1];
    __shared__ float Bs[CD][CT + 1];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * CT, n0 = blockIdx.x * CT;
    const int KK = K * K, R = C * KK, plane = OH * OW, cols = N * plane;

    // The image column this thread gathers for every panel: x[colBase +
    // rowOff[kb]] when the tap lands inside the image.
    const int bn = tid & 63, gn = n0 + bn;
    const bool colOK = gn < cols;
    int iy0 = 1 << 29, ix0 = 0;  // outside the image when !colOK
    long long colBase = 0;
    if (colOK) {
        int img = gn / plane, q = gn - img * plane, oy = q / OW, ox = q - oy * OW;
        iy0 = oy * S - P, ix0 = ox * S - P;
        colBase = (cm ? (long long)img * H * W : (long long)img * C * H * W) + (long long)iy0 * W + ix0;
    }
    const long long cstride = cm ? (long long)N * H * W : (long long)H * W;
    // The panel's rows r = (c, i, j), decomposed once per block: the tap
    // (i, j) and the offset c*cstride + i*W + j (written for the next
    // panel between the barriers, while no thread reads them).
    __shared__ int rowI[CD], rowJ[CD];
    __shared__ long long rowOff[CD];
    const auto fillRows = [&](int k) {
        if (tid < CD) {
            int r = k + tid, i = 1 << 29, j = 0;
            long long off = 0;
            if (r < R) {
                int c = r / KK, t = r - c * KK;
                i = t / K, j = t - i * K;
                off = c * cstride + (long long)i * W + j;
            }
            rowI[tid] = i, rowJ[tid] = j, rowOff[tid] = off;
        }
    };
    fillRows(0);
    __syncthreads();

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;

    for (int k0 = 0; k0 < R; k0 += CD) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            int e = tid + 256 * l;
            // w panel: row m0+mm, column k0+kk.
            int kk = e & 15, mm = e >> 4;
            int gm = m0 + mm, gk = k0 + kk;
            As[kk][mm] = (gm < O && gk < R) ? w[(long long)gm * R + gk] : 0.f;
            // col panel: row k0+kb, column n0+bn.
            int kb = (tid >> 6) + 4 * l;
            int yy = iy0 + rowI[kb], xx = ix0 + rowJ[kb];
            Bs[kb][bn] = ((unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W) ? x[colBase + rowOff[kb]] : 0.f;
        }
        __syncthreads();
        conv_tile_mac(As, Bs, acc, tx, ty);
        fillRows(k0 + CD);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int gm = m0 + ty + 16 * i;
        if (gm >= O) continue;
        float bias = hasBias ? b[gm] : 0.f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int c = n0 + tx + 16 * j;
            if (c < cols) y[(long long)gm * cols + c] = acc[i][j] + bias;
        }
    }
}

// dx[c][q] (+)= sum over (o,i,j) of w[o][c][i][j]*dycol[(o*K+i)*K+j][q], q = (n*H+y)*W+x, 64 x 64 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256) conv_dgrad_f32(
    float* dx, const float* dy, const float* w, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ float As[CD][CT + 1];
    __shared__ float Bs[CD][CT + 1];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * CT, n0 = blockIdx.x * CT;
    const int KK = K * K, R = O * KK, plane = H * W, cols = N * plane, oplane = OH * OW;
    const long long ocols = (long long)N * oplane;

    // The image position this thread gathers dy for in every panel.
    const int bn = tid & 63, gn = n0 + bn;
    int py = -(1 << 29), px = 0;  // no output position when gn >= cols
    long long base = 0;
    if (gn < cols) {
        int img = gn / plane, q = gn - img * plane, yy = q / W, xx = q - yy * W;
        py = yy + P, px = xx + P;
        base = (long long)img * oplane;
    }
    // The panel's rows k = (o, i, j), decomposed once per block: the tap,
    // o's plane of dy and o's kernel (i, j) in w (written for the next
    // panel between the barriers, while no thread reads them).
    __shared__ int rowI[CD], rowJ[CD];
    __shared__ long long rowO[CD], rowW[CD];
    const auto fillRows = [&](int k) {
        if (tid < CD) {
            int r = k + tid, i = 1 << 29, j = 0;
            long long ob = 0, wb = 0;
            if (r < R) {
                int o = r / KK, t = r - o * KK;
                i = t / K, j = t - i * K;
                ob = o * ocols, wb = (long long)o * C * KK + t;
            }
            rowI[tid] = i, rowJ[tid] = j, rowO[tid] = ob, rowW[tid] = wb;
        }
    };
    fillRows(0);
    __syncthreads();

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;

    for (int k0 = 0; k0 < R; k0 += CD) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            int e = tid + 256 * l;
            // w^T' panel: row m0+mm (input channel), column k0+kk = (o, i, j).
            int kk = e & 15, mm = e >> 4;
            int gm = m0 + mm, gk = k0 + kk;
            As[kk][mm] = (gm < C && gk < R) ? w[rowW[kk] + (long long)gm * KK] : 0.f;
            // dycol panel: row k0+kb = (o, i, j), column n0+bn.
            int kb = (tid >> 6) + 4 * l;
            int sy = py - rowI[kb], sx = px - rowJ[kb];
            float v = 0.f;
            if (sy >= 0 && sx >= 0) {
                int oy = sy, ox = sx;
                if (S != 1) {
                    oy = sy / S, ox = sx / S;
                    if (oy * S != sy || ox * S != sx) oy = OH;  // no output position: skip
                }
                if (oy < OH && ox < OW) v = dy[rowO[kb] + base + (long long)oy * OW + ox];
            }
            Bs[kb][bn] = v;
        }
        __syncthreads();
        conv_tile_mac(As, Bs, acc, tx, ty);
        fillRows(k0 + CD);
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int gn2 = n0 + tx + 16 * j;
        if (gn2 >= cols) continue;
        int img = gn2 / plane, q = gn2 - img * plane;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int c = m0 + ty + 16 * i;
            if (c >= C) continue;
            long long at = cm ? ((long long)c * N + img) * plane + q : ((long long)img * C + c) * plane + q;
            float v = acc[i][j];
            if (accumulate) v += dx[at];
            dx[at] = v;
        }
    }
}

// out[z][o][r] (+)= sum over p in chunk z of dy[o][p]*col[r][p], 64 x 64 tiles per 256-thread block, chunks over blockIdx.z
extern "C" __global__ void __launch_bounds__(256) conv_wgrad_f32(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ float As[CD][CT + 1];
    __shared__ float Bs[CD][CT + 1];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * CT, n0 = blockIdx.x * CT;
    const int KK = K * K, R = C * KK, plane = OH * OW, cols = N * plane;
    const int kbeg = blockIdx.z * chunk, kend = kbeg + chunk < cols ? kbeg + chunk : cols;
    float* o = out + (long long)blockIdx.z * O * R;

    // The weight column (c, i, j) this thread gathers for every panel:
    // x[rowOff[kb] + colOff] when the tap lands inside the image.
    const int bn = tid & 63, gn = n0 + bn;
    const long long cstride = cm ? (long long)N * H * W : (long long)H * W;
    const long long istride = cm ? (long long)H * W : (long long)C * H * W;
    int ri = 1 << 29, rj = 0;  // outside the image when gn >= R
    long long colOff = 0;
    if (gn < R) {
        int ci = gn / KK, t = gn - ci * KK;
        ri = t / K - P, rj = t - (t / K) * K - P;
        colOff = ci * cstride + (long long)ri * W + rj;
    }
    // The panel's rows p = (n, oy, ox), decomposed once per block (written
    // for the next panel between the barriers, while no thread reads them).
    __shared__ int rowY[CD], rowX[CD];
    __shared__ long long rowOff[CD];
    const auto fillRows = [&](int k) {
        if (tid < CD) {
            int p = k + tid, y = 1 << 29, x0 = 0;
            long long off = 0;
            if (p < kend) {
                int img = p / plane, q = p - img * plane, oy = q / OW, ox = q - oy * OW;
                y = oy * S, x0 = ox * S;
                off = img * istride + (long long)y * W + x0;
            }
            rowY[tid] = y, rowX[tid] = x0, rowOff[tid] = off;
        }
    };
    fillRows(kbeg);
    __syncthreads();

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;

    for (int k0 = kbeg; k0 < kend; k0 += CD) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            int e = tid + 256 * l;
            // dy panel: row m0+mm (output channel), column k0+kk (output position).
            int kk = e & 15, mm = e >> 4;
            int gm = m0 + mm, gk = k0 + kk;
            As[kk][mm] = (gm < O && gk < kend) ? dy[(long long)gm * cols + gk] : 0.f;
            // col^T panel: row k0+kb (output position), column n0+bn (c, i, j).
            int kb = (tid >> 6) + 4 * l;
            int yy = rowY[kb] + ri, xx = rowX[kb] + rj;
            Bs[kb][bn] = ((unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W) ? x[rowOff[kb] + colOff] : 0.f;
        }
        __syncthreads();
        conv_tile_mac(As, Bs, acc, tx, ty);
        fillRows(k0 + CD);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int gm = m0 + ty + 16 * i;
        if (gm >= O) continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int c = n0 + tx + 16 * j;
            if (c >= R) continue;
            float* q = o + (long long)gm * R + c;
            float v = acc[i][j];
            if (accumulate) v += *q;
            *q = v;
        }
    }
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

// ---------------------------------------------------------------------------
// Wide tiles: the same three passes with 128 x 128 output tiles per
// 256-thread block, for products whose rows (O, or C for the input
// gradient) exceed one 64-row tile (cuda/conv.go chooses). Each thread
// accumulates an 8 x 8 sub-tile: rows ty*4 + i and 64 + ty*4 + i, columns
// tx*4 + j and 64 + tx*4 + j (wideAt), read from shared memory four at a
// time, so every panel element loaded feeds twice the multiply-adds of the
// 64 x 64 kernels. Panels are 8 deep and double-buffered: the next panel's
// elements are gathered into registers while the current one is
// multiplied, then stored into the other buffer, one barrier per panel.
// Every output element still sums its terms in increasing order of the
// reduction index, one FMA at a time, so its value is bit for bit the
// 64 x 64 kernels' (the tests check both).

#define WT 128        // wide tile edge
#define WD 8          // wide panel depth
#define WP (WT + 4)   // padded panel row: conflict-free stores, 16-byte aligned rows

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

// wideAt is the tile row (t = ty) or column (t = tx) of a thread's i-th
// accumulator row or column.
__device__ __forceinline__ int wideAt(int t, int i) { return (i & 4) * 16 + t * 4 + (i & 3); }

// conv_wide_mac is the 8 x 8 register tile update from one panel pair.
__device__ __forceinline__ void conv_wide_mac(float (*As)[WP], float (*Bs)[WP], float acc[8][8], int tx, int ty) {
#pragma unroll
    for (int kk = 0; kk < WD; kk++) {
        float ra[8], rb[8];
        LD4(ra, &As[kk][ty * 4]);
        LD4(ra + 4, &As[kk][64 + ty * 4]);
        LD4(rb, &Bs[kk][tx * 4]);
        LD4(rb + 4, &Bs[kk][64 + tx * 4]);
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
}

// The panel element a thread gathers: l-th of its four, in the A panel
// (WT rows x WD columns: row wideAm, column wideAk) and the B panel (WD
// rows x WT columns: row wideBk, column tid & 127).
__device__ __forceinline__ int wideAk(int tid, int l) { return (tid + 256 * l) & 7; }
__device__ __forceinline__ int wideAm(int tid, int l) { return (tid + 256 * l) >> 3; }
__device__ __forceinline__ int wideBk(int tid, int l) { return (tid >> 7) + 2 * l; }

// conv_wide_loop runs the double-buffered panels k0 = kbeg, kbeg + WD, ...
// < kend: fill(buf, k) writes the row decomposition of panel k into
// buffer buf (threads tid < WD), gather(buf, k, a, b) reads a thread's four
// A and B elements of panel k with decomposition buf.
template <class Fill, class Gather>
__device__ __forceinline__ void conv_wide_loop(float (*As)[WD][WP], float (*Bs)[WD][WP], float acc[8][8],
                                               int kbeg, int kend, Fill fill, Gather gather) {
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
    float ga[4], gb[4];
    const auto store = [&](int s) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            As[s][wideAk(tid, l)][wideAm(tid, l)] = ga[l];
            Bs[s][wideBk(tid, l)][tid & 127] = gb[l];
        }
    };
    fill(0, kbeg);
    __syncthreads();
    gather(0, kbeg, ga, gb);
    store(0);
    fill(1, kbeg + WD);
    __syncthreads();
    int s = 0;
    for (int k0 = kbeg; k0 < kend; k0 += WD) {
        const bool more = k0 + WD < kend;
        if (more) gather(s ^ 1, k0 + WD, ga, gb);
        conv_wide_mac(As[s], Bs[s], acc, tx, ty);
        if (more) {
            store(s ^ 1);
            fill(s, k0 + 2 * WD);
        }
        __syncthreads();
        s ^= 1;
    }
}

// y[o][p] = sum over r of w[o][r]*col[r][p] (+ b[o] when hasBias), 128 x 128 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256, 2) conv_fwd_wide_f32(
    float* y, const float* x, const float* w, const float* b, int hasBias,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ __align__(16) float As[2][WD][WP];
    __shared__ __align__(16) float Bs[2][WD][WP];
    __shared__ int rowI[2][WD], rowJ[2][WD];
    __shared__ long long rowOff[2][WD];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * WT, n0 = blockIdx.x * WT;
    const int KK = K * K, R = C * KK, plane = OH * OW, cols = N * plane;
    const int gn = n0 + (tid & 127);
    int iy0 = 1 << 29, ix0 = 0;  // outside the image when gn >= cols
    long long colBase = 0;
    if (gn < cols) {
        int img = gn / plane, q = gn - img * plane, oy = q / OW, ox = q - oy * OW;
        iy0 = oy * S - P, ix0 = ox * S - P;
        colBase = (cm ? (long long)img * H * W : (long long)img * C * H * W) + (long long)iy0 * W + ix0;
    }
    const long long cstride = cm ? (long long)N * H * W : (long long)H * W;
    const auto fill = [&](int buf, int k) {
        if (tid < WD) {
            int r = k + tid, i = 1 << 29, j = 0;
            long long off = 0;
            if (r < R) {
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
            int gm = m0 + wideAm(tid, l), gk = k0 + wideAk(tid, l);
            ga[l] = (gm < O && gk < R) ? w[(long long)gm * R + gk] : 0.f;
            int kb = wideBk(tid, l);
            int yy = iy0 + rowI[buf][kb], xx = ix0 + rowJ[buf][kb];
            gb[l] = ((unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W) ? x[colBase + rowOff[buf][kb]] : 0.f;
        }
    };
    float acc[8][8];
    conv_wide_loop(As, Bs, acc, 0, R, fill, gather);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int gm = m0 + wideAt(ty, i);
        if (gm >= O) continue;
        float bias = hasBias ? b[gm] : 0.f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int c = n0 + wideAt(tx, j);
            if (c < cols) y[(long long)gm * cols + c] = acc[i][j] + bias;
        }
    }
}

// dx[c][q] (+)= sum over (o,i,j) of w[o][c][i][j]*dycol[(o*K+i)*K+j][q], 128 x 128 tiles per 256-thread block
extern "C" __global__ void __launch_bounds__(256, 2) conv_dgrad_wide_f32(
    float* dx, const float* dy, const float* w, int accumulate,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ __align__(16) float As[2][WD][WP];
    __shared__ __align__(16) float Bs[2][WD][WP];
    __shared__ int rowI[2][WD], rowJ[2][WD];
    __shared__ long long rowO[2][WD], rowW[2][WD];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * WT, n0 = blockIdx.x * WT;
    const int KK = K * K, R = O * KK, plane = H * W, cols = N * plane, oplane = OH * OW;
    const long long ocols = (long long)N * oplane;
    const int gn = n0 + (tid & 127);
    int py = -(1 << 29), px = 0;  // no output position when gn >= cols
    long long base = 0;
    if (gn < cols) {
        int img = gn / plane, q = gn - img * plane, yy = q / W, xx = q - yy * W;
        py = yy + P, px = xx + P;
        base = (long long)img * oplane;
    }
    const auto fill = [&](int buf, int k) {
        if (tid < WD) {
            int r = k + tid, i = 1 << 29, j = 0;
            long long ob = 0, wb = 0;
            if (r < R) {
                int o = r / KK, t = r - o * KK;
                i = t / K, j = t - i * K;
                ob = o * ocols, wb = (long long)o * C * KK + t;
            }
            rowI[buf][tid] = i, rowJ[buf][tid] = j, rowO[buf][tid] = ob, rowW[buf][tid] = wb;
        }
    };
    const auto gather = [&](int buf, int k0, float* ga, float* gb) {
#pragma unroll
        for (int l = 0; l < 4; l++) {
            int kk = wideAk(tid, l), gm = m0 + wideAm(tid, l), gk = k0 + kk;
            ga[l] = (gm < C && gk < R) ? w[rowW[buf][kk] + (long long)gm * KK] : 0.f;
            int kb = wideBk(tid, l);
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
    float acc[8][8];
    conv_wide_loop(As, Bs, acc, 0, R, fill, gather);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        int gn2 = n0 + wideAt(tx, j);
        if (gn2 >= cols) continue;
        int img = gn2 / plane, q = gn2 - img * plane;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            int c = m0 + wideAt(ty, i);
            if (c >= C) continue;
            long long at = cm ? ((long long)c * N + img) * plane + q : ((long long)img * C + c) * plane + q;
            float v = acc[i][j];
            if (accumulate) v += dx[at];
            dx[at] = v;
        }
    }
}

// out[z][o][r] (+)= sum over p in chunk z of dy[o][p]*col[r][p], 128 x 128 tiles per 256-thread block, chunks over blockIdx.z
extern "C" __global__ void __launch_bounds__(256, 2) conv_wgrad_wide_f32(
    float* out, const float* dy, const float* x, int accumulate, int chunk,
    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW, int cm) {
    __shared__ __align__(16) float As[2][WD][WP];
    __shared__ __align__(16) float Bs[2][WD][WP];
    __shared__ int rowY[2][WD], rowX[2][WD];
    __shared__ long long rowOff[2][WD];
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int m0 = blockIdx.y * WT, n0 = blockIdx.x * WT;
    const int KK = K * K, R = C * KK, plane = OH * OW, cols = N * plane;
    const int kbeg = blockIdx.z * chunk, kend = kbeg + chunk < cols ? kbeg + chunk : cols;
    float* o = out + (long long)blockIdx.z * O * R;
    const int gn = n0 + (tid & 127);
    const long long cstride = cm ? (long long)N * H * W : (long long)H * W;
    const long long istride = cm ? (long long)H * W : (long long)C * H * W;
    int ri = 1 << 29, rj = 0;  // outside the image when gn >= R
    long long colOff = 0;
    if (gn < R) {
        int ci = gn / KK, t = gn - ci * KK;
        ri = t / K - P, rj = t - (t / K) * K - P;
        colOff = ci * cstride + (long long)ri * W + rj;
    }
    const auto fill = [&](int buf, int k) {
        if (tid < WD) {
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
            int gm = m0 + wideAm(tid, l), gk = k0 + wideAk(tid, l);
            ga[l] = (gm < O && gk < kend) ? dy[(long long)gm * cols + gk] : 0.f;
            int kb = wideBk(tid, l);
            int yy = rowY[buf][kb] + ri, xx = rowX[buf][kb] + rj;
            gb[l] = ((unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W) ? x[rowOff[buf][kb] + colOff] : 0.f;
        }
    };
    float acc[8][8];
    conv_wide_loop(As, Bs, acc, kbeg, kend, fill, gather);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int gm = m0 + wideAt(ty, i);
        if (gm >= O) continue;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int c = n0 + wideAt(tx, j);
            if (c >= R) continue;
            float* q = o + (long long)gm * R + c;
            float v = acc[i][j];
            if (accumulate) v += *q;
            *q = v;
        }
    }
}

// conv_pass.cuh: the three passes of a convolution (forward, input
// gradient, weight gradient) as implicit GEMMs over the whole batch, with
// the engine that runs the product left open: conv_tc.cu's mma.sync
// pipeline (ctc_engine, sm_80) and conv_wg.cu's wgmma one (cwg_engine,
// sm_90a) run the same passes, the same tables and the same gathers'
// addresses. A pass's geometry, layouts and arguments are conv.cu's (see
// its header).
//
// An engine E gives:
//   E::BM                  the rows of the product a block computes (its
//                          columns: CTC_BN);
//   E::Acc                 the thread's accumulators;
//   E::col(i)              column i (0..3) of this thread's B elements,
//                          relative to the block's first: the same 4
//                          columns in every panel;
//   E::copyRows(s, x, ld, r0, Rn, k0, K, vec)
//                          this thread's copies of panel k0 (32 k) of the
//                          dense k-contiguous A operand (rows r0.. of Rn,
//                          element (r, k) at x[r*ld + k], K columns; 16
//                          bytes at a time where vec says the rows start
//                          on 16 bytes) into the A panel at s;
//   E::copyMasked(s, src, cols, n0, k0, Rn, vec, dense, tabT, tabOff, taps, base)
//                          the masked gather of B panel k0 (element (k,
//                          column i) is src[base[i] + tabOff[k]] where tap
//                          tabT[k] is valid in taps[i], or zero; where
//                          dense, src is that matrix itself, Rn x cols);
//   E::gather(s, any, row, src)
//                          the general gather of a B panel: element (k,
//                          column i) is *src(i, row(k)), or zero where src
//                          returns nullptr;
//   E::loop(smem, acc, kbeg, kend, fill, copyA, copyB)
//                          the panels of rows kbeg .. kend-1 of the
//                          reduction into acc: fill(slot, k0) writes the
//                          table of the panel from k0 into slot (threads
//                          0..31, two slots), copyA(s, k0) and copyB(s,
//                          k0, slot) issue this thread's copies of the
//                          panel into the A and B panels at s;
//   E::eachPair(acc, m0, n0, M, N, out), E::each(acc, m0, n0, M, N, out)
//                          the epilogue: out(row, column, v0, v1, two) for
//                          the pairs of accumulators at columns (gn, gn +
//                          1), gn even and below N (two: gn + 1 < N too),
//                          or out(row, column, v) for each.

#pragma once

#include "tc.cuh"

#define CTC_BN 256  // columns of the product per block

// ctc_rowv is what a gather reads of a panel row's table once for all of
// a thread's elements in that row: two table words and an offset.
struct ctc_rowv {
    int a, b, off;
};

// CTC_TAPS is the most taps (K*K) a kernel may have for the masked
// gathers: a window's valid taps are the bits of one word, bit i*K + j
// for tap (i, j), and tap CTC_TAPS (bit 31) is never valid (the tables'
// value for rows past the reduction, the columns' past the product). A
// masked element costs a shift, an and and an add; larger kernels (the
// 7 x 7 stem) take the checked gathers.
#define CTC_TAPS 31

// ctc_taps_hw returns the valid taps of a KH x KW window: bit i*KW + j
// set where (unsigned)(y0 + d*i) < H and (unsigned)(x0 + d*j) < W (d = 1:
// the forward window from its top-left corner; d = -1: the output
// positions an input position reaches, stride 1).
__device__ __forceinline__ unsigned ctc_taps_hw(int y0, int x0, int d, int H, int W, int KH, int KW) {
    unsigned cm = 0, m = 0;
    for (int j = 0; j < KW; j++)
        if ((unsigned)(x0 + d * j) < (unsigned)W) cm |= 1u << j;
    for (int i = 0; i < KH; i++)
        if ((unsigned)(y0 + d * i) < (unsigned)H) m |= cm << (i * KW);
    return m;
}

// ctc_taps is ctc_taps_hw for a K x K window.
__device__ __forceinline__ unsigned ctc_taps(int y0, int x0, int d, int H, int W, int K) {
    return ctc_taps_hw(y0, x0, d, H, W, K, K);
}

// ctc_valid reports whether tap t is set in taps.
__device__ __forceinline__ bool ctc_valid(unsigned taps, int t) { return (taps >> t) & 1u; }

// ctc_f2 is two floats stored (or loaded) as one 8-byte access.
struct alignas(8) ctc_f2 {
    float x, y;
};

// ctc_put2 stores v0 at p[0] and, when two, v1 at p[1], each plus the
// value it replaces when accumulate (old + new, as the scalar stores
// add): one 8-byte access where both go and p is on 8 bytes.
__device__ __forceinline__ void ctc_put2(float* p, float v0, float v1, bool two, bool accumulate) {
    if (two && (reinterpret_cast<unsigned long long>(p) & 7) == 0) {
        ctc_f2* q = reinterpret_cast<ctc_f2*>(p);
        if (accumulate) {
            const ctc_f2 old = *q;
            v0 += old.x, v1 += old.y;
        }
        *q = ctc_f2{v0, v1};
        return;
    }
    if (accumulate) v0 += p[0];
    p[0] = v0;
    if (two) {
        if (accumulate) v1 += p[1];
        p[1] = v1;
    }
}

// ctc_aligned reports whether rows of p with leading dimension ld start on
// 16 bytes (tc2_copy's 16-byte copies).
__device__ __forceinline__ bool ctc_aligned(const float* p, long long ld) {
    return ((reinterpret_cast<unsigned long long>(p) | (unsigned long long)ld * 4) & 15) == 0;
}

// ctc_tap sets, for column gm = (c, i, j) of w (Rn = C*K*K of them), the
// tap's offset (ri, rj) from an output position's top-left corner in the
// padded image, its index t = i*K + j and its offset coff in x (channel
// stride cstride); past Rn, ri is far outside the image and t is
// CTC_TAPS (never valid).
__device__ __forceinline__ void ctc_tap(int gm, int Rn, int KK, int K, int P, int W, int cstride, int& ri, int& rj,
                                        int& t, int& coff) {
    ri = 1 << 29, rj = 0, t = CTC_TAPS, coff = 0;
    if (gm < Rn) {
        const int ci = gm / KK;
        t = gm - ci * KK;
        const int ti = t / K;
        ri = ti - P, rj = t - ti * K - P, coff = ci * cstride + ri * W + rj;
    }
}

// ctc_fill_positions writes, by threads 0..31, the table of the weight
// gradient's panel of output positions p = k0 + tid < kend, p = (n, oy,
// ox): the window's offset in x (image stride istride) and, when masked,
// its valid taps (ctc_taps; none past kend), else its top-left (oy*S,
// ox*S; far outside the image past kend).
__device__ __forceinline__ void ctc_fill_positions(int* tabY, int* tabX, int* tabOff, int k0, int kend, int plane,
                                                   int OW, int S, int P, int H, int W, int K, int istride,
                                                   bool masked) {
    const int tid = threadIdx.x;
    if (tid < TC2_BK) {
        const int p = k0 + tid;
        int yv = masked ? 0 : 1 << 29, xv = 0, off = 0;
        if (p < kend) {
            const int img = p / plane, q = p - img * plane, oy = q / OW, ox = q - oy * OW;
            yv = oy * S, xv = ox * S, off = img * istride + yv * W + xv;
            if (masked) yv = (int)ctc_taps(yv - P, xv - P, 1, H, W, K), xv = 0;
        }
        tabY[tid] = yv, tabX[tid] = xv, tabOff[tid] = off;
    }
}

// ctc_fill_taps writes, by threads 0..31, the table of a panel of rows
// r = k0 + tid = (c, i, j) of the reduction over Rn = C*K*K rows: the
// tap t = i*K + j (CTC_TAPS past Rn) and the offset c*cstride + i*di + j*dj.
__device__ __forceinline__ void ctc_fill_taps(int* tabT, int* tabOff, int k0, int Rn, int KK, int K, int cstride,
                                              int di, int dj) {
    const int tid = threadIdx.x;
    if (tid < TC2_BK) {
        const int r = k0 + tid;
        int t = CTC_TAPS, off = 0;
        if (r < Rn) {
            const int c = r / KK;
            t = r - c * KK;
            const int i = t / K;
            off = c * cstride + i * di + (t - i * K) * dj;
        }
        tabT[tid] = t, tabOff[tid] = off;
    }
}

// ctc_fill_ij writes, by threads 0..31, the checked gathers' table of a
// panel of rows r = k0 + tid = (c, i, j) of the reduction over Rn =
// C*K*K rows: i and j (i far outside any image past Rn) and the offset
// c*cstride + i*di + j*dj.
__device__ __forceinline__ void ctc_fill_ij(int* tabI, int* tabJ, int* tabOff, int k0, int Rn, int KK, int K,
                                            int cstride, int di, int dj) {
    const int tid = threadIdx.x;
    if (tid < TC2_BK) {
        const int r = k0 + tid;
        int i = 1 << 29, j = 0, off = 0;
        if (r < Rn) {
            const int c = r / KK, t = r - c * KK;
            i = t / K, j = t - i * K, off = c * cstride + i * di + j * dj;
        }
        tabI[tid] = i, tabJ[tid] = j, tabOff[tid] = off;
    }
}

// The lane mapping of a gathered B panel (conv_wg.cu's, and conv_tc.cu's
// *_tf32rl kernels'): thread t (lane l of warp w) copies columns
// conv_lane_col(i) = l % 8 + 8(4w + i), i < 4, at k = (l / 8) % 4 + 4j,
// j < 8, so that one 4-byte copy of a warp covers 8 consecutive columns
// at 4 k: 4 sectors of global memory where the columns are consecutive
// addresses, and in both engines' panels 32 distinct banks.
__device__ __forceinline__ int conv_lane_col(int i) { return (threadIdx.x & 7) + 8 * ((threadIdx.x >> 5) * 4 + i); }

// conv_lane_gather issues this thread's cp.async of a B panel in the lane
// mapping: element (k, column conv_lane_col(i)), k = (t / 8) % 4 + 4j, is
// *src(i, row(k)), or zero where src returns nullptr, into dst(j, i).
template <class Row, class Src, class Dst>
__device__ __forceinline__ void conv_lane_gather(const float* any, Row row, Src src, Dst dst) {
    const int q = (threadIdx.x >> 3) & 3;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const ctc_rowv v = row(q + 4 * j);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float* p = src(i, v);
            cp_async4_if(dst(j, i), p ? p : any, p != nullptr);
        }
    }
}

// conv_masked_gather is the masked gather of B panel k0 through gather
// (an engine's): element (k, column i) is src[base[i] + tabOff[k]] where
// tap tabT[k] is valid in taps[i], or zero.
template <class Gather>
__device__ __forceinline__ void conv_masked_gather(Gather gather, const float* src, const int* tabT, const int* tabOff,
                                                   const unsigned (&taps)[4], const int (&base)[4]) {
    gather(
        src, [&](int k) { return ctc_rowv{tabT[k], 0, tabOff[k]}; },
        [&](int i, const ctc_rowv& v) -> const float* { return ctc_valid(taps[i], v.a) ? src + (base[i] + v.off) : nullptr; });
}

// The passes below take, where the kernel has at most CTC_TAPS taps, the
// masked gathers (each column's or row's valid taps precomputed once, an
// element tested by one bit), else the checked ones (each element's
// position tested against the image); both write the same panels.

// conv_masked_loop runs E's panel loop over the Rn rows of a product
// whose B operand is the masked gather (E::copyMasked from src, cols
// columns; dense: src is B itself): each thread's 4 columns get a base
// offset and a mask of valid taps from column(gn, base, taps) (none past
// cols), and the panels' tables from ctc_fill_taps (Kv taps a row; the
// offset steps cs a channel, di a tap row, dj a tap column).
template <class E, class CopyA, class Column>
__device__ __forceinline__ void conv_masked_loop(unsigned* smem, typename E::Acc& acc, int (&tabI)[2][TC2_BK],
                                                 int (&tabOff)[2][TC2_BK], const float* src, int cols, int n0, int Rn,
                                                 int KK, int Kv, int cs, int di, int dj, bool vb, bool dense,
                                                 CopyA copyA, Column column) {
    int base[4];
    unsigned taps[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int gn = n0 + E::col(i);
        base[i] = 0, taps[i] = 0;
        if (gn < cols) column(gn, base[i], taps[i]);
    }
    const auto fill = [&](int slot, int k0) { ctc_fill_taps(tabI[slot], tabOff[slot], k0, Rn, KK, Kv, cs, di, dj); };
    const auto copyB = [&](unsigned* s, int k0, int slot) {
        E::copyMasked(s, src, cols, n0, k0, Rn, vb, dense, tabI[slot], tabOff[slot], taps, base);
    };
    E::loop(smem, acc, 0, Rn, fill, copyA, copyB);
}

// conv_fwd_pass is the forward pass, y (O x N*OH*OW, channel-major) = w
// (O x C*K*K) * col (+ b), on engine E (grid: 256-column tiles along x,
// E::BM-row tiles along y).
template <class E>
__device__ __forceinline__ void conv_fwd_pass(float* y, const float* x, const float* w, const float* b, int hasBias,
                                            int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW,
                                            int cm) {
    TC2_DYNAMIC_SHARED(smem);
    __shared__ int tabI[2][TC2_BK], tabJ[2][TC2_BK], tabOff[2][TC2_BK];
    const int KK = K * K, Rn = C * KK, plane = OH * OW, cols = N * plane;
    const int m0 = blockIdx.y * E::BM, n0 = blockIdx.x * CTC_BN;
    const bool dense = K == 1 && S == 1 && P == 0 && cm;  // col is x itself (C x cols)
    const int cstride = cm ? N * H * W : H * W;
    const bool va = ctc_aligned(w, Rn), vb = ctc_aligned(x, cols);
    const auto copyA = [&](unsigned* s, int k0) { E::copyRows(s, w, Rn, m0, O, k0, Rn, va); };
    typename E::Acc acc;
    if (KK <= CTC_TAPS) {
        // A column (output position): the image offset of the window's
        // top-left tap and the window's valid taps.
        conv_masked_loop<E>(smem, acc, tabI, tabOff, x, cols, n0, Rn, KK, K, cstride, W, 1, vb, dense, copyA,
                            [&](int gn, int& base, unsigned& taps) {
                                const int img = gn / plane, q = gn - img * plane, oy = q / OW, ox = q - oy * OW;
                                const int iy0 = oy * S - P, ix0 = ox * S - P;
                                base = (cm ? img * H * W : img * C * H * W) + iy0 * W + ix0;
                                taps = ctc_taps(iy0, ix0, 1, H, W, K);
                            });
    } else {
        // This thread's 4 columns (output positions): the top-left tap and
        // the image offset of its window.
        int iy0[4], ix0[4], base[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int gn = n0 + E::col(i);
            iy0[i] = 1 << 29, ix0[i] = 0, base[i] = 0;  // outside the image when gn >= cols
            if (gn < cols) {
                const int img = gn / plane, q = gn - img * plane, oy = q / OW, ox = q - oy * OW;
                iy0[i] = oy * S - P, ix0[i] = ox * S - P;
                base[i] = (cm ? img * H * W : img * C * H * W) + iy0[i] * W + ix0[i];
            }
        }
        const auto fill = [&](int slot, int k0) {
            ctc_fill_ij(tabI[slot], tabJ[slot], tabOff[slot], k0, Rn, KK, K, cstride, W, 1);
        };
        const auto copyB = [&](unsigned* s, int k0, int slot) {
            E::gather(
                s, x, [&](int k) { return ctc_rowv{tabI[slot][k], tabJ[slot][k], tabOff[slot][k]}; },
                [&](int i, const ctc_rowv& v) -> const float* {
                    const int yy = iy0[i] + v.a, xx = ix0[i] + v.b;
                    const bool in = (unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W;
                    return in ? x + base[i] + v.off : nullptr;
                });
        };
        E::loop(smem, acc, 0, Rn, fill, copyA, copyB);
    }
    E::eachPair(acc, m0, n0, O, cols, [&](int gm, int gn, float v0, float v1, bool two) {
        if (hasBias) v0 += b[gm], v1 += b[gm];
        ctc_put2(y + (long long)gm * cols + gn, v0, v1, two, false);
    });
}

// conv_dgrad_pass is the input gradient, dx (+)= w^T' (C x O*K*K, from
// conv_wt_f32) * dycol, on engine E.
template <class E>
__device__ __forceinline__ void conv_dgrad_pass(float* dx, const float* dy, const float* wt, int accumulate,
                                              int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW,
                                              int cm) {
    TC2_DYNAMIC_SHARED(smem);
    __shared__ int tabI[2][TC2_BK], tabJ[2][TC2_BK], tabOff[2][TC2_BK];
    const int KK = K * K, Rn = O * KK, plane = H * W, cols = N * plane, oplane = OH * OW;
    const int m0 = blockIdx.y * E::BM, n0 = blockIdx.x * CTC_BN;
    const bool dense = K == 1 && S == 1 && P == 0;  // dycol is dy itself (O x cols)
    const bool va = ctc_aligned(wt, Rn), vb = ctc_aligned(dy, cols);
    const auto copyA = [&](unsigned* s, int k0) { E::copyRows(s, wt, Rn, m0, C, k0, Rn, va); };
    typename E::Acc acc;
    if (S == 1 && KK <= CTC_TAPS) {
        // Stride 1: input position (y, x) meets tap (i, j) of output
        // position (y + P - i, x + P - j), at offset base - i*OW - j from
        // base, the offset of (y + P, x + P) in dy's plane: a column's base
        // and valid taps.
        conv_masked_loop<E>(smem, acc, tabI, tabOff, dy, cols, n0, Rn, KK, K, N * oplane, -OW, -1, vb, dense, copyA,
                            [&](int gn, int& base, unsigned& taps) {
                                const int img = gn / plane, q = gn - img * plane, yy = q / W, xx = q - yy * W;
                                base = img * oplane + (yy + P) * OW + xx + P;
                                taps = ctc_taps(yy + P, xx + P, -1, OH, OW, K);
                            });
    } else {
        // This thread's 4 columns (input positions): the padded position
        // and the image's offset in dy's planes.
        int py[4], px[4], base[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int gn = n0 + E::col(i);
            py[i] = -(1 << 29), px[i] = 0, base[i] = 0;  // no output position when gn >= cols
            if (gn < cols) {
                const int img = gn / plane, q = gn - img * plane, yy = q / W, xx = q - yy * W;
                py[i] = yy + P, px[i] = xx + P, base[i] = img * oplane;
            }
        }
        const auto fill = [&](int slot, int k0) {
            ctc_fill_ij(tabI[slot], tabJ[slot], tabOff[slot], k0, Rn, KK, K, N * oplane, 0, 0);
        };
        const auto copyB = [&](unsigned* s, int k0, int slot) {
            E::gather(
                s, dy, [&](int k) { return ctc_rowv{tabI[slot][k], tabJ[slot][k], tabOff[slot][k]}; },
                [&](int i, const ctc_rowv& v) -> const float* {
                    const int sy = py[i] - v.a, sx = px[i] - v.b;
                    if (sy < 0 || sx < 0) return nullptr;
                    int oy = sy, ox = sx;
                    if (S != 1) {
                        oy = sy / S, ox = sx / S;
                        if (oy * S != sy || ox * S != sx) return nullptr;  // no output position
                    }
                    return oy < OH && ox < OW ? dy + v.off + base[i] + oy * OW + ox : nullptr;
                });
        };
        E::loop(smem, acc, 0, Rn, fill, copyA, copyB);
    }
    // Channel-major, (c, img, q) is c*cols + gn: no division by the plane
    // for each accumulator, and columns gn, gn + 1 adjacent.
    if (cm) {
        E::eachPair(acc, m0, n0, C, cols, [&](int c, int gn, float v0, float v1, bool two) {
            ctc_put2(dx + (long long)c * cols + gn, v0, v1, two, accumulate);
        });
    } else {
        E::each(acc, m0, n0, C, cols, [&](int c, int gn, float v) {
            const int img = gn / plane, q = gn - img * plane;
            const long long at = ((long long)img * C + c) * plane + q;
            if (accumulate) v += dx[at];
            dx[at] = v;
        });
    }
}

// conv_wgrad_pass is the weight gradient's partial product of chunk z =
// blockIdx.z of the output positions, out[z] (+)= dy (O x chunk) * col^T
// (chunk x C*K*K), on engine E.
template <class E>
__device__ __forceinline__ void conv_wgrad_pass(float* out, const float* dy, const float* x, int accumulate, int chunk,
                                              int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW,
                                              int cm) {
    TC2_DYNAMIC_SHARED(smem);
    __shared__ int tabY[2][TC2_BK], tabX[2][TC2_BK], tabOff[2][TC2_BK];
    const int KK = K * K, Rn = C * KK, plane = OH * OW, cols = N * plane;
    const int m0 = blockIdx.y * E::BM, n0 = blockIdx.x * CTC_BN;
    const int kbeg = blockIdx.z * chunk, kend = kbeg + chunk < cols ? kbeg + chunk : cols;
    float* o = out + (long long)blockIdx.z * O * Rn;
    const int cstride = cm ? N * H * W : H * W, istride = cm ? H * W : C * H * W;
    const bool masked = KK <= CTC_TAPS;
    // This thread's 4 columns (c, i, j) of w: the tap's offset from the
    // output position's top-left, its index and the channel's offset in x.
    int ri[4], rj[4], tap[4], coff[4];
#pragma unroll
    for (int i = 0; i < 4; i++) ctc_tap(n0 + E::col(i), Rn, KK, K, P, W, cstride, ri[i], rj[i], tap[i], coff[i]);
    // The panel's rows p = (n, oy, ox).
    const auto fill = [&](int slot, int k0) {
        ctc_fill_positions(tabY[slot], tabX[slot], tabOff[slot], k0, kend, plane, OW, S, P, H, W, K, istride, masked);
    };
    const bool va = ctc_aligned(dy, cols) && (kbeg & 3) == 0;
    const auto copyA = [&](unsigned* s, int k0) { E::copyRows(s, dy, cols, m0, O, k0, kend, va); };
    const auto row = [&](int slot, int k) { return ctc_rowv{tabY[slot][k], tabX[slot][k], tabOff[slot][k]}; };
    typename E::Acc acc;
    if (masked) {
        const auto copyB = [&](unsigned* s, int k0, int slot) {
            E::gather(
                s, x, [&](int k) { return row(slot, k); },
                [&](int i, const ctc_rowv& v) -> const float* {
                    return ctc_valid((unsigned)v.a, tap[i]) ? x + (v.off + coff[i]) : nullptr;
                });
        };
        E::loop(smem, acc, kbeg, kend, fill, copyA, copyB);
    } else {
        const auto copyB = [&](unsigned* s, int k0, int slot) {
            E::gather(
                s, x, [&](int k) { return row(slot, k); },
                [&](int i, const ctc_rowv& v) -> const float* {
                    const int yy = v.a + ri[i], xx = v.b + rj[i];
                    const bool in = (unsigned)yy < (unsigned)H && (unsigned)xx < (unsigned)W;
                    return in ? x + v.off + coff[i] : nullptr;
                });
        };
        E::loop(smem, acc, kbeg, kend, fill, copyA, copyB);
    }
    E::eachPair(acc, m0, n0, O, Rn, [&](int gm, int gn, float v0, float v1, bool two) {
        ctc_put2(o + (long long)gm * Rn + gn, v0, v1, two, accumulate);
    });
}

// conv_phase is the geometry of phase (ry, rx) of the input gradient at
// stride S (conv_dgrad_phase_pass): the input positions (y, x) with (y +
// P) % S = ry and (x + P) % S = rx, y = S*(t0y + ty) + ry - P for ty <
// Hp (x likewise), meet exactly the taps (ry + S*u, rx + S*v), u < Ku, v
// < Kv, of the kernel, at output position (t0y + ty - u, t0x + tx - v):
// a stride-1 input gradient of a Ku x Kv kernel over dy (cuda/conv.go's
// convPhase computes the same).
struct conv_phase {
    int Ku, Kv, t0y, t0x, Hp, Wp;
};

// conv_phase_len returns the taps of residue r of a K-tap axis at stride
// S, the first t of its positions (the least t >= 0 with S*t + r - P >=
// 0) and how many positions of an axis of n it has.
__device__ __forceinline__ void conv_phase_len(int r, int K, int S, int P, int n, int& taps, int& t0, int& len) {
    taps = r < K ? (K - r + S - 1) / S : 0;
    t0 = P > r ? (P - r + S - 1) / S : 0;
    const int end = n + P - r > 0 ? (n + P - r + S - 1) / S : 0;  // first t past the axis
    len = end > t0 ? end - t0 : 0;
}

__device__ __forceinline__ conv_phase conv_phase_of(int ry, int rx, int K, int S, int P, int H, int W) {
    conv_phase f;
    conv_phase_len(ry, K, S, P, H, f.Ku, f.t0y, f.Hp);
    conv_phase_len(rx, K, S, P, W, f.Kv, f.t0x, f.Wp);
    return f;
}

// conv_dgrad_phase_pass is phase (ry, rx) of the input gradient at
// stride S > 1 (conv_phase), on engine E: dx at the phase's positions
// (+)= wtp (C x O*Ku*Kv: wtp[c][(o*Ku + u)*Kv + v] = w[o][c][ry + S*u][rx
// + S*v], conv_wt_phase_f32) * dy gathered by the stride-1 masked
// gather; its columns are the phase's positions (n, ty, tx). A phase
// without taps writes zeros (adds nothing when accumulating). Needs
// Ku*Kv <= CTC_TAPS (cuda/conv.go checks). With dense set, dx is instead
// the phase's own C x N*Hp*Wp matrix (row c, column (n*Hp + ty)*Wp + tx),
// written whole and contiguously (accumulate ignored): the phases' direct
// writes land at a stride of S in dx, half of each 32-byte sector at
// stride 2, where conv_phase_gather_f32 then writes dx whole.
template <class E>
__device__ __forceinline__ void conv_dgrad_phase_pass(float* dx, const float* dy, const float* wtp, int accumulate,
                                                    int N, int C, int H, int W, int O, int K, int S, int P, int OH, int OW,
                                                    int cm, int ry, int rx, int dense) {
    TC2_DYNAMIC_SHARED(smem);
    __shared__ int tabI[2][TC2_BK], tabOff[2][TC2_BK];
    const conv_phase f = conv_phase_of(ry, rx, K, S, P, H, W);
    const int KK = f.Ku * f.Kv, Rn = O * KK, pplane = f.Hp * f.Wp, cols = N * pplane, oplane = OH * OW;
    const int m0 = blockIdx.y * E::BM, n0 = blockIdx.x * CTC_BN;
    const bool va = ctc_aligned(wtp, Rn), vb = ctc_aligned(dy, cols);
    const auto copyA = [&](unsigned* s, int k0) { E::copyRows(s, wtp, Rn, m0, C, k0, Rn, va); };
    typename E::Acc acc;
    // A column: the output position (T, T') that tap (0, 0) of the phase
    // reaches, its offset in dy's plane, and the valid taps (u, v) (bit
    // u*Kv + v: 0 <= T - u < OH, 0 <= T' - v < OW).
    conv_masked_loop<E>(smem, acc, tabI, tabOff, dy, cols, n0, Rn, KK, f.Kv, N * oplane, -OW, -1, vb, false, copyA,
                        [&](int gn, int& base, unsigned& taps) {
                            const int img = gn / pplane, q = gn - img * pplane, ty = q / f.Wp, tx = q - ty * f.Wp;
                            const int T = f.t0y + ty, T2 = f.t0x + tx;
                            base = img * oplane + T * OW + T2;
                            taps = ctc_taps_hw(T, T2, -1, OH, OW, f.Ku, f.Kv);
                        });
    if (dense) {
        E::each(acc, m0, n0, C, cols, [&](int c, int gn, float v) { dx[(long long)c * cols + gn] = v; });
        return;
    }
    E::each(acc, m0, n0, C, cols, [&](int c, int gn, float v) {
        const int img = gn / pplane, q = gn - img * pplane, ty = q / f.Wp, tx = q - ty * f.Wp;
        const int y = S * (f.t0y + ty) + ry - P, x = S * (f.t0x + tx) + rx - P;
        const long long at = (cm ? (long long)c * N + img : (long long)img * C + c) * H * W + y * W + x;
        if (accumulate) v += dx[at];
        dx[at] = v;
    });
}

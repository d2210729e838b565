// wg.cuh: Hopper's warpgroup MMA (wgmma.mma_async, sm_90a) as
// gemm_wg.cu and conv_wg.cu use it: the fences, commits and waits, the
// m64n256 (TF32, BF16) and m64n128 (TF32) forms, and the matrix
// descriptor of a 128-byte-swizzled K-major operand. The CPU emulator
// (emu/cuda_emu.h) defines the same names.
#pragma once

#include "tc.cuh"

#ifdef __CUDA_ARCH__
// smem_u32 is p's address in the shared window.
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// fence_proxy_async orders the thread's earlier writes to shared memory
// (its cp.async copies, once waited for) before later accesses through
// the async proxy (wgmma's operand reads).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// wg_fence is wgmma.fence: the accumulators' registers and shared memory
// written before it are ordered before the next wgmma.
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

// wg_commit closes the warpgroup's wgmma issued since the last commit
// into a group.
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

// wg_wait waits until at most N of the warpgroup's groups are pending.
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// wg_fence_operands keeps the compiler from moving accesses to d across
// the point (the registers belong to the tensor cores while a wgmma is in
// flight).
template <int N>
__device__ __forceinline__ void wg_fence_operands(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// WG_MMA(INSTR, IMM) is the asm of one m64n256 wgmma into the 128
// accumulators d from descriptors da and db: instruction INSTR, scale-d
// from acc (1: d += A*B; 0: d = A*B, d's input ignored, so that no other
// instruction need define the accumulators inside the pipeline), then the
// immediates IMM (scale-a, scale-b, and for 16-bit types the
// transpositions).
#define WG_MMA(INSTR, IMM)                                                                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" INSTR " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, " IMM ";\n}\n" \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
                 : "l"(da), "l"(db), "r"(acc))

// wgmma_tf32_m64n256k8: d (64 x 256 over the warpgroup) += A (64 x 8,
// descriptor da) * B (256 x 8, descriptor db)^T (d = when acc is 0), TF32
// in, FP32 out.
__device__ __forceinline__ void wgmma_tf32_m64n256k8(float (&d)[128], unsigned long long da, unsigned long long db, int acc) {
    WG_MMA("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "1, 1");
}

// wgmma_bf16_m64n256k16: d += A (64 x 16) * B (256 x 16)^T (d = when acc
// is 0), BF16 in, FP32 out, both K-major (no transposition).
__device__ __forceinline__ void wgmma_bf16_m64n256k16(float (&d)[128], unsigned long long da, unsigned long long db, int acc) {
    WG_MMA("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "1, 1, 0, 0");
}
// WG_MMA64(INSTR, IMM) is WG_MMA for the m64n128 forms: 64 accumulators.
#define WG_MMA64(INSTR, IMM)                                                                    \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" INSTR " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, " IMM ";\n}\n" \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
                 : "l"(da), "l"(db), "r"(acc))

// wgmma_tf32_m64n128k8: d (64 x 128 over the warpgroup) += A (64 x 8,
// descriptor da) * B (128 x 8, descriptor db)^T (d = when acc is 0), TF32
// in, FP32 out.
__device__ __forceinline__ void wgmma_tf32_m64n128k8(float (&d)[64], unsigned long long da, unsigned long long db, int acc) {
    WG_MMA64("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32", "1, 1");
}
#endif

// wg_desc is the matrix descriptor of a 128-byte-swizzled K-major operand
// whose first 8 rows start at shared address addr (bits 0-13: addr / 16;
// 16-29: leading byte offset / 16, unused by the swizzled K-major layouts,
// 1 by convention; 32-45: stride byte offset / 16, 1024 bytes between
// groups of 8 rows; 49-51: base offset 0, the stages being 1024-aligned;
// 62-63: swizzle mode 1, 128 bytes).
__device__ __forceinline__ unsigned long long wg_desc(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

// wg_ktile issues the products of one 128-byte k-tile, its A rows at
// shared address sa and its B rows at sb: wgmma.fence, the four k steps
// (32 bytes each) through mma(j, da, db) with step j's descriptors, one
// commit, then wgmma.wait_group 1 (this group stays in flight, the one
// before is done), the accumulators d fenced on both sides.
template <int N, class Mma>
__device__ __forceinline__ void wg_ktile(float (&d)[N], unsigned sa, unsigned sb, Mma mma) {
    wg_fence_operands(d);
    wg_fence();
#pragma unroll
    for (int j = 0; j < 4; j++) mma(j, wg_desc(sa + 32 * j), wg_desc(sb + 32 * j));
    wg_commit();
    wg_wait<1>();
    wg_fence_operands(d);
}

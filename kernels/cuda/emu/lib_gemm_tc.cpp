// lib_gemm_tc.cpp: gemm_tc.cu on the CPU emulator, exported for the Go tests
// of package cuda (the backend's tf32 and bf16 precisions through
// cudatest.Emulator and the fake driver).
#include "cuda_emu.h"
#include "../gemm_tc.cu"

EMU_EXPORT(gemm_tf32)
EMU_EXPORT(gemm_bf16)
EMU_EXPORT(gemm_tc2_tf32)
EMU_EXPORT(gemm_tc2_bf16)
EMU_EXPORT(gemm_tc3_tf32)

// lib_gemm_wg.cpp: gemm_wg.cu on the CPU emulator, exported for the Go
// tests of package cuda (the backend's TCWG kernels through
// cudatest.Emulator and the fake driver).
#include "cuda_emu.h"
#include "../gemm_wg.cu"

EMU_EXPORT(gemm_wg_pack_tf32)
EMU_EXPORT(gemm_wg_pack_bf16)
EMU_EXPORT(gemm_wg_tf32)
EMU_EXPORT(gemm_wg_bf16)
EMU_EXPORT(gemm_wg3_tf32)
EMU_EXPORT(gemm_wg3_bf16)
EMU_EXPORT(gemm_wg_packt_tf32)
EMU_EXPORT(gemm_wg_packt_bf16)
EMU_EXPORT_CLUSTER(gemm_wgm_tf32, 2)
EMU_EXPORT_CLUSTER(gemm_wgm_bf16, 2)
EMU_EXPORT_CLUSTER(gemm_wgm3_tf32, 2)
EMU_EXPORT_CLUSTER(gemm_wgm3_bf16, 2)
EMU_EXPORT_CLUSTER(gemm_wgms_tf32, 2)
EMU_EXPORT_CLUSTER(gemm_wgms_bf16, 2)
EMU_EXPORT(gemm_wgs_tf32)
EMU_EXPORT(gemm_wgs_bf16)
EMU_EXPORT_CONCURRENT(gemm_wgp_tf32, 4)
EMU_EXPORT_CONCURRENT(gemm_wgp_bf16, 4)

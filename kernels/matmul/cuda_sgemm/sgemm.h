// The SGEMM ladder's steps (one file each in this folder): their launcher type and table (steps.h),
// the autotuned step's tile shapes, and the launch every step goes through.
#pragma once

#include "steps.h"

namespace kl {

// Tile shapes of the "autotuned" step (index = config id; the binding takes "autotuned:<id>"):
// BMxBNxBK, warp tile, threads per block, cp.async stages. The one list of them: the matmul
// family's Python reads it from this file (sgemm_autotuned_configs).
inline constexpr const char* kSgemmAutotunedConfigs[] = {
    "128x128x8_w64x64_t128_s4",  "128x128x16_w64x64_t128_s3", "128x256x8_w64x64_t256_s3",
    "256x128x8_w64x64_t256_s3",  "128x128x16_w64x32_t256_s3", "128x64x16_w64x32_t128_s3",
    "64x128x16_w32x64_t128_s3",  "64x64x16_w32x32_t128_s3"};

// A step: C (M, N) = A (M, K) @ B (K, N), fp32, row-major, M, N, K > 0; `config` (the autotuned
// step's tile shape, an index into kSgemmAutotunedConfigs, -1 for the launcher's pick) is -1 for
// the other steps. Returns kOk, kErrBadSize (a grid too tall for the sizes), kErrUnknownConfig (a
// config out of range) or the launch's cudaError_t.
using SgemmStep = int (*)(const float* A, const float* B, float* C, int M, int N, int K, int config,
                          cudaStream_t stream);
KL_STEP_TABLE(sgemm, SgemmStep);

// c = a @ b through `step`: the argument checks and the empty cases every step shares.
int sgemm_launch(SgemmStep step, const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
                 int config, cudaStream_t stream);

}  // namespace kl

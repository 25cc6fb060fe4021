// SGEMM, C (M, N) = A (M, K) @ B (K, N), fp32, row-major, any M, N, K: the steps of siboehm's
// worklog ("How to optimize a CUDA matmul kernel for cuBLAS-like performance"), one file per step
// in this folder as in his SGEMM_CUDA, each with its kernel and the launcher it registers under its
// name in the step table below; their order is ladder.yaml's. sgemm_common.cuh holds what several
// steps share (the float4 helpers). This header holds the steps' launcher type and table, the
// autotuned step's tile shapes, and kl::sgemm_launch: the argument checks and the empty cases.
//
// Every kernel checks bounds, so M, N, K need not be multiples of any tile. The float4 paths
// (VEC=true) need K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B, C; otherwise the launcher
// picks the VEC=false instantiation of the same kernel, which loads and stores scalars.
#pragma once

#include <climits>

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
inline int sgemm_launch(SgemmStep step, const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
                        int config, cudaStream_t stream) {
  if (config >= count_of(kSgemmAutotunedConfigs)) return kErrUnknownConfig;
  if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) return kErrBadSize;
  if (m == 0 || n == 0) return kOk;
  if (k == 0) {  // an empty sum: C = 0
    return static_cast<int>(cudaMemsetAsync(c, 0, sizeof(float) * static_cast<size_t>(m) * n, stream));
  }
  return step(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), config, stream);
}

}  // namespace kl

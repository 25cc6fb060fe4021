// The matmul family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum SgemmVariant : int {
  kSgemmNaive = 0,
  kSgemmCoalesced = 1,
  kSgemmSmemTiling = 2,
  kSgemmBlocktile1d = 3,
  kSgemmBlocktile2d = 4,
  kSgemmVectorized = 5,
  kSgemmWarptile = 6,
  kSgemmAutotuned = 7
};
inline constexpr const char* kSgemmVariants[] = {"naive",        "coalesced",  "smem_tiling", "blocktile_1d",
                                                 "blocktile_2d", "vectorized", "warptile",    "autotuned"};
// Tile shapes of the "autotuned" variant (index = config id; the binding takes "autotuned:<id>"):
// BMxBNxBK, warp tile, threads per block, cp.async stages.
inline constexpr const char* kSgemmAutotunedConfigs[] = {
    "128x128x8_w64x64_t128_s4",  "128x128x16_w64x64_t128_s3", "128x256x8_w64x64_t256_s3",
    "256x128x8_w64x64_t256_s3",  "128x128x16_w64x32_t256_s3", "128x64x16_w64x32_t128_s3",
    "64x128x16_w32x64_t128_s3",  "64x64x16_w32x32_t128_s3"};
static_assert(count_of(kSgemmVariants) == kSgemmAutotuned + 1, "sgemm variant names and ids disagree");

// c (M, N) = a (M, K) @ b (K, N), fp32, all row-major. `config` picks the tile shape of
// kSgemmAutotuned (an index into kSgemmAutotunedConfigs; -1: the launcher's default for the
// shape) and must be -1 for every other variant.
int sgemm_launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int variant,
                 int config, cudaStream_t stream);

}  // namespace kl

// SGEMM, C (M, N) = A (M, K) @ B (K, N), fp32, row-major, any M, N, K: the steps of siboehm's
// worklog ("How to optimize a CUDA matmul kernel for cuBLAS-like performance"), one file per step
// as in his SGEMM_CUDA, each with its kernel and the host function that launches it
// (sgemm_steps.h):
//
//   1_naive.cu         one thread per C element, uncoalesced
//   2_coalesced.cu     consecutive threads on consecutive columns of C
//   3_smem_tiling.cu   32x32 tiles of A and B in shared memory
//   4_blocktile_1d.cu  64x64 block tile, 8 results per thread down a column
//   5_blocktile_2d.cu  128x128 block tile, an 8x8 register tile per thread
//   6_vectorized.cu    5 with float4 loads and stores, A transposed in shared memory
//   7_warptile.cu      warp tiles, double-buffered shared memory (siboehm kernel 10)
//   8_autotuned.cu     a templated warp-tiled cp.async pipeline, several tile shapes
//
// sgemm_common.cuh holds what several steps share (the float4 helpers). This file holds the
// family's launcher, kl::sgemm_launch (sgemm.h): the argument checks, the empty cases and the
// dispatch on the variant.
//
// Every kernel checks bounds, so M, N, K need not be multiples of any tile. The float4 paths
// (VEC=true) need K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B, C; otherwise the launcher
// picks the VEC=false instantiation of the same kernel, which loads and stores scalars.
#include "sgemm.h"

#include <climits>

#include <cuda_runtime.h>

#include "sgemm_steps.h"

namespace kl {
namespace {

int run_sgemm(const float* A, const float* B, float* C, int M, int N, int K, int variant, int config,
              cudaStream_t stream) {
  switch (variant) {
    case kSgemmNaive: return run_sgemm_naive(A, B, C, M, N, K, stream);
    case kSgemmCoalesced: return run_sgemm_coalesced(A, B, C, M, N, K, stream);
    case kSgemmSmemTiling: return run_sgemm_smem_tiling(A, B, C, M, N, K, stream);
    case kSgemmBlocktile1d: return run_sgemm_blocktile_1d(A, B, C, M, N, K, stream);
    case kSgemmBlocktile2d: return run_sgemm_blocktile_2d(A, B, C, M, N, K, stream);
    case kSgemmVectorized: return run_sgemm_vectorized(A, B, C, M, N, K, stream);
    case kSgemmWarptile: return run_sgemm_warptile(A, B, C, M, N, K, stream);
    case kSgemmAutotuned: return run_sgemm_autotuned(A, B, C, M, N, K, config, stream);
    default: return kErrUnknownVariant;
  }
}

}  // namespace

int sgemm_launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int variant,
                 int config, cudaStream_t stream) {
  if (variant < 0 || variant >= count_of(kSgemmVariants)) return kErrUnknownVariant;
  if (config >= 0 && (variant != kSgemmAutotuned || config >= count_of(kSgemmAutotunedConfigs))) {
    return kErrUnknownVariant;
  }
  if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) return kErrBadSize;
  if (m == 0 || n == 0) return kOk;
  if (k == 0) {  // an empty sum: C = 0
    return static_cast<int>(cudaMemsetAsync(c, 0, sizeof(float) * static_cast<size_t>(m) * n, stream));
  }
  return run_sgemm(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), variant, config, stream);
}

}  // namespace kl

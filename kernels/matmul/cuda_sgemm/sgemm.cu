// SGEMM, C (M, N) = A (M, K) @ B (K, N), fp32, row-major, any M, N, K: the steps of siboehm's
// worklog ("How to optimize a CUDA matmul kernel for cuBLAS-like performance"), one file per step
// as in his SGEMM_CUDA, each with its kernel and the launcher it registers under its name in the
// step table (sgemm.h); their order is ladder.yaml's:
//
//   naive.cu         one thread per C element, uncoalesced
//   coalesced.cu     consecutive threads on consecutive columns of C
//   smem_tiling.cu   32x32 tiles of A and B in shared memory
//   blocktile_1d.cu  64x64 block tile, 8 results per thread down a column
//   blocktile_2d.cu  128x128 block tile, an 8x8 register tile per thread
//   vectorized.cu    blocktile_2d with float4 loads and stores, A transposed in shared memory
//   warptile.cu      warp tiles, double-buffered shared memory (siboehm kernel 10)
//   autotuned.cu     a templated warp-tiled cp.async pipeline, several tile shapes
//
// sgemm_common.cuh holds what several steps share (the float4 helpers). This file holds the step
// table and kl::sgemm_launch (sgemm.h): the argument checks and the empty cases.
//
// Every kernel checks bounds, so M, N, K need not be multiples of any tile. The float4 paths
// (VEC=true) need K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B, C; otherwise the launcher
// picks the VEC=false instantiation of the same kernel, which loads and stores scalars.
#include "sgemm.h"

#include <climits>

#include <cuda_runtime.h>

namespace kl {

KL_DEFINE_STEP_TABLE(sgemm, SgemmStep)

int sgemm_launch(SgemmStep step, const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k,
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

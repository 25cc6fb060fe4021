// SGEMM ladder, step smem_tiling: shared-memory tiling (siboehm's kernel 3). C (M, N) = A (M, K) @
// B (K, N), fp32, row-major, any M, N, K.
//
// sgemm_smem_tiling: 32x32 tiles of A and B staged in shared memory, 1024 threads.

#include "sgemm.h"
#include "sgemm_common.cuh"

constexpr int kSmemTile = 32;

__global__ void __launch_bounds__(kSmemTile * kSmemTile)
    sgemm_smem_tiling(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                      float* __restrict__ C) {
  __shared__ float As[kSmemTile * kSmemTile];
  __shared__ float Bs[kSmemTile * kSmemTile];
  const int tr = threadIdx.x / kSmemTile;
  const int tc = threadIdx.x % kSmemTile;
  const int row = blockIdx.y * kSmemTile + tr;
  const int col = blockIdx.x * kSmemTile + tc;
  float tmp = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kSmemTile) {
    As[tr * kSmemTile + tc] = (row < M && k0 + tc < K) ? A[static_cast<size_t>(row) * K + k0 + tc] : 0.0f;
    Bs[tr * kSmemTile + tc] = (k0 + tr < K && col < N) ? B[static_cast<size_t>(k0 + tr) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kSmemTile; ++k) tmp += As[tr * kSmemTile + k] * Bs[k * kSmemTile + tc];
    __syncthreads();
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = tmp;
}

namespace kl {
namespace {

int smem_tiling(const float* A, const float* B, float* C, int M, int N, int K, int /*config*/, cudaStream_t stream) {
  if (cdiv(M, kSmemTile) > kSgemmMaxGridY) return kErrBadSize;
  const dim3 grid(static_cast<unsigned>(cdiv(N, kSmemTile)), static_cast<unsigned>(cdiv(M, kSmemTile)));
  sgemm_smem_tiling<<<grid, kSmemTile * kSmemTile, 0, stream>>>(M, N, K, A, B, C);
  return launch_status();
}

}  // namespace

KL_STEP(sgemm, smem_tiling);

}  // namespace kl

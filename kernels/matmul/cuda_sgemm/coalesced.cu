// SGEMM ladder, step coalesced: global-memory coalescing (siboehm's kernel 2). C (M, N) = A (M, K) @
// B (K, N), fp32, row-major, any M, N, K.
//
// sgemm_coalesced: consecutive threads take consecutive columns: B reads and C writes coalesce, A is
// a broadcast.

#include "sgemm.h"
#include "sgemm_common.cuh"

constexpr int kCoalesceTile = 32;

__global__ void __launch_bounds__(1024) sgemm_coalesced(int M, int N, int K, const float* __restrict__ A,
                                                        const float* __restrict__ B, float* __restrict__ C) {
  const int row = blockIdx.x * kCoalesceTile + threadIdx.x / kCoalesceTile;
  const int col = blockIdx.y * kCoalesceTile + threadIdx.x % kCoalesceTile;
  if (row < M && col < N) {
    float tmp = 0.0f;
    for (int i = 0; i < K; ++i) tmp += A[static_cast<size_t>(row) * K + i] * B[static_cast<size_t>(i) * N + col];
    C[static_cast<size_t>(row) * N + col] = tmp;
  }
}

namespace kl {
namespace {

int coalesced(const float* A, const float* B, float* C, int M, int N, int K, int /*config*/, cudaStream_t stream) {
  if (cdiv(N, kCoalesceTile) > kSgemmMaxGridY) return kErrBadSize;
  const dim3 grid(static_cast<unsigned>(cdiv(M, kCoalesceTile)), static_cast<unsigned>(cdiv(N, kCoalesceTile)));
  sgemm_coalesced<<<grid, kCoalesceTile * kCoalesceTile, 0, stream>>>(M, N, K, A, B, C);
  return launch_status();
}

}  // namespace

KL_STEP(sgemm, coalesced);

}  // namespace kl

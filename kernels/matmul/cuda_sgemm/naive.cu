// SGEMM ladder, step naive (siboehm's kernel 1). C (M, N) = A (M, K) @ B (K, N), fp32,
// row-major, any M, N, K.
//
// sgemm_naive: one thread per C element; consecutive threads walk down a column of C, so their A
// rows and C writes are strided (uncoalesced).

#include "sgemm.h"
#include "sgemm_common.cuh"

__global__ void __launch_bounds__(1024)
    sgemm_naive(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;  // row of C
  const int y = blockIdx.y * blockDim.y + threadIdx.y;  // column of C
  if (x < M && y < N) {
    float tmp = 0.0f;
    for (int i = 0; i < K; ++i) tmp += A[static_cast<size_t>(x) * K + i] * B[static_cast<size_t>(i) * N + y];
    C[static_cast<size_t>(x) * N + y] = tmp;
  }
}

namespace kl {
namespace {

int naive(const float* A, const float* B, float* C, int M, int N, int K, int /*config*/, cudaStream_t stream) {
  if (cdiv(N, 32) > kSgemmMaxGridY) return kErrBadSize;
  const dim3 grid(static_cast<unsigned>(cdiv(M, 32)), static_cast<unsigned>(cdiv(N, 32)));
  sgemm_naive<<<grid, dim3(32, 32), 0, stream>>>(M, N, K, A, B, C);
  return launch_status();
}

}  // namespace

KL_STEP(sgemm, naive);

}  // namespace kl

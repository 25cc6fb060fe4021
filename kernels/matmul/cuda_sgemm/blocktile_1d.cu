// SGEMM ladder, step blocktile_1d: 1D block tiling (siboehm's kernel 4). C (M, N) = A (M, K) @ B (K, N),
// fp32, row-major, any M, N, K.
//
// sgemm_blocktile_1d: BM=64 BN=64 BK=8, each thread computes TM=8 results of one column.

#include "sgemm.h"
#include "sgemm_common.cuh"

namespace bt1 {
constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int kThreads = BM * BN / TM;  // 512
}  // namespace bt1

__global__ void __launch_bounds__(bt1::kThreads)
    sgemm_blocktile_1d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C) {
  using namespace bt1;
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  const int rowBase = blockIdx.y * BM;
  const int colBase = blockIdx.x * BN;
  const int tc = threadIdx.x % BN;  // column of C in the tile
  const int tr = threadIdx.x / BN;  // rows tr*TM .. tr*TM+TM-1
  const int aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;  // BM x BK = one element per thread
  const int bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;  // BK x BN = one element per thread
  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    {
      const int r = rowBase + aRow, c = k0 + aCol;
      As[aRow * BK + aCol] = (r < M && c < K) ? A[static_cast<size_t>(r) * K + c] : 0.0f;
    }
    {
      const int r = k0 + bRow, c = colBase + bCol;
      Bs[bRow * BN + bCol] = (r < K && c < N) ? B[static_cast<size_t>(r) * N + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + tc];
#pragma unroll
      for (int t = 0; t < TM; ++t) acc[t] += As[(tr * TM + t) * BK + k] * b;
    }
    __syncthreads();
  }
  const int col = colBase + tc;
#pragma unroll
  for (int t = 0; t < TM; ++t) {
    const int row = rowBase + tr * TM + t;
    if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc[t];
  }
}

namespace kl {
namespace {

int blocktile_1d(const float* A, const float* B, float* C, int M, int N, int K, int /*config*/, cudaStream_t stream) {
  if (cdiv(M, bt1::BM) > kSgemmMaxGridY) return kErrBadSize;
  const dim3 grid(static_cast<unsigned>(cdiv(N, bt1::BN)), static_cast<unsigned>(cdiv(M, bt1::BM)));
  sgemm_blocktile_1d<<<grid, bt1::kThreads, 0, stream>>>(M, N, K, A, B, C);
  return launch_status();
}

}  // namespace

KL_STEP(sgemm, blocktile_1d);

}  // namespace kl

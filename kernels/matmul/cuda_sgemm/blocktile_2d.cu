// SGEMM ladder, step blocktile_2d: 2D block tiling (siboehm's kernel 5). C (M, N) = A (M, K) @ B (K, N),
// fp32, row-major, any M, N, K.
//
// sgemm_blocktile_2d: BM=BN=128 BK=8, each thread an 8x8 register tile (outer products).

#include "sgemm.h"
#include "sgemm_common.cuh"

namespace bt2 {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
}  // namespace bt2

__global__ void __launch_bounds__(bt2::kThreads)
    sgemm_blocktile_2d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                       float* __restrict__ C) {
  using namespace bt2;
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  const int rowBase = blockIdx.y * BM;
  const int colBase = blockIdx.x * BN;
  const int tc = threadIdx.x % (BN / TN);
  const int tr = threadIdx.x / (BN / TN);
  const int aRow = threadIdx.x / BK, aCol = threadIdx.x % BK;
  constexpr int aStride = kThreads / BK;  // 32 rows per pass, 4 passes
  const int bRow = threadIdx.x / BN, bCol = threadIdx.x % BN;
  constexpr int bStride = kThreads / BN;  // 2 rows per pass, 4 passes
  float acc[TM * TN] = {};
  float regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int o = 0; o < BM; o += aStride) {
      const int r = rowBase + aRow + o, c = k0 + aCol;
      As[(aRow + o) * BK + aCol] = (r < M && c < K) ? A[static_cast<size_t>(r) * K + c] : 0.0f;
    }
#pragma unroll
    for (int o = 0; o < BK; o += bStride) {
      const int r = k0 + bRow + o, c = colBase + bCol;
      Bs[(bRow + o) * BN + bCol] = (r < K && c < N) ? B[static_cast<size_t>(r) * N + c] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) regM[i] = As[(tr * TM + i) * BK + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) regN[j] = Bs[k * BN + tc * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += regM[i] * regN[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = rowBase + tr * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = colBase + tc * TN + j;
      if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = acc[i * TN + j];
    }
  }
}

namespace kl {
namespace {

int blocktile_2d(const float* A, const float* B, float* C, int M, int N, int K, int /*config*/, cudaStream_t stream) {
  if (cdiv(M, bt2::BM) > kSgemmMaxGridY) return kErrBadSize;
  const dim3 grid(static_cast<unsigned>(cdiv(N, bt2::BN)), static_cast<unsigned>(cdiv(M, bt2::BM)));
  sgemm_blocktile_2d<<<grid, bt2::kThreads, 0, stream>>>(M, N, K, A, B, C);
  return launch_status();
}

}  // namespace

KL_STEP(sgemm, blocktile_2d);

}  // namespace kl

// SGEMM ladder, step vectorized: vectorized memory access (siboehm's kernel 6). C (M, N) = A (M, K) @
// B (K, N), fp32, row-major, any M, N, K.
//
// sgemm_vectorized: blocktile_2d with float4 global loads, A transposed in shared memory so the 8 A
// values of a thread are two float4 reads, float4 C stores. VEC=false (K or N not a multiple of 4,
// or a pointer not 16-byte aligned) loads and stores scalars instead.

#include "sgemm.h"
#include "sgemm_common.cuh"

namespace vz {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
}  // namespace vz

template <bool VEC>
__global__ void __launch_bounds__(vz::kThreads)
    sgemm_vectorized(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                     float* __restrict__ C) {
  using namespace vz;
  __shared__ __align__(16) float As[BK * BM];  // transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK * BN];
  const int rowBase = blockIdx.y * BM;
  const int colBase = blockIdx.x * BN;
  const int tc = threadIdx.x % (BN / TN);
  const int tr = threadIdx.x / (BN / TN);
  // A tile BM x BK: one float4 (4 consecutive k) per thread. B tile BK x BN: one float4 per thread.
  const int aRow = threadIdx.x / (BK / 4), aCol = (threadIdx.x % (BK / 4)) * 4;
  const int bRow = threadIdx.x / (BN / 4), bCol = (threadIdx.x % (BN / 4)) * 4;
  const bool aRowOk = rowBase + aRow < M;
  const float* aPtr = A + static_cast<size_t>(rowBase + aRow) * K + aCol;
  const float* bPtr = B + static_cast<size_t>(bRow) * N + colBase + bCol;
  float acc[TM][TN] = {};
  float regM[TM], regN[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 a = kl::load4_guarded<VEC>(aPtr + k0, aRowOk, k0 + aCol, K);
    As[(aCol + 0) * BM + aRow] = a.x;
    As[(aCol + 1) * BM + aRow] = a.y;
    As[(aCol + 2) * BM + aRow] = a.z;
    As[(aCol + 3) * BM + aRow] = a.w;
    const float4 b = kl::load4_guarded<VEC>(bPtr + static_cast<size_t>(k0) * N, k0 + bRow < K, colBase + bCol, N);
    *reinterpret_cast<float4*>(&Bs[bRow * BN + bCol]) = b;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int q = 0; q < TM; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&As[k * BM + tr * TM + q]);
        regM[q] = v.x;
        regM[q + 1] = v.y;
        regM[q + 2] = v.z;
        regM[q + 3] = v.w;
      }
#pragma unroll
      for (int q = 0; q < TN; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[k * BN + tc * TN + q]);
        regN[q] = v.x;
        regN[q + 1] = v.y;
        regN[q + 2] = v.z;
        regN[q + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = rowBase + tr * TM + i;
#pragma unroll
    for (int q = 0; q < TN; q += 4) {
      const int col = colBase + tc * TN + q;
      kl::store4_guarded<VEC>(C + static_cast<size_t>(row) * N + col, row < M, col, N,
                              make_float4(acc[i][q], acc[i][q + 1], acc[i][q + 2], acc[i][q + 3]));
    }
  }
}

namespace kl {
namespace {

int vectorized(const float* A, const float* B, float* C, int M, int N, int K, int /*config*/, cudaStream_t stream) {
  if (cdiv(M, vz::BM) > kSgemmMaxGridY) return kErrBadSize;
  const dim3 grid(static_cast<unsigned>(cdiv(N, vz::BN)), static_cast<unsigned>(cdiv(M, vz::BM)));
  if (sgemm_float4_ok(A, B, C, N, K)) {
    sgemm_vectorized<true><<<grid, vz::kThreads, 0, stream>>>(M, N, K, A, B, C);
  } else {
    sgemm_vectorized<false><<<grid, vz::kThreads, 0, stream>>>(M, N, K, A, B, C);
  }
  return launch_status();
}

}  // namespace

KL_STEP(sgemm, vectorized);

}  // namespace kl

// SGEMM ladder, step warptile: warp tiling (siboehm's kernel 10). C (M, N) = A (M, K) @ B (K, N),
// fp32, row-major, any M, N, K.
//
// sgemm_warptile: a block of 8 warps on a 128x128 tile, each warp a 64x32 tile made of 2x2 sub-tiles
// of 32x16, each thread 2x2 sub-tiles of 4x4 (8x8 results); plus double-buffered shared memory with
// the next tile prefetched into registers during the math, one barrier per BK=8 step, As padded to
// kill store bank conflicts, 2 blocks per SM. VEC=false (K or N not a multiple of 4, or a pointer
// not 16-byte aligned) loads and stores scalars instead.

#include "sgemm.h"
#include "sgemm_common.cuh"

namespace wt {
constexpr int BM = 128, BN = 128, BK = 8;
constexpr int kThreads = 256;                      // 8 warps
constexpr int WM = 64, WN = 32;                    // warp tile; warps laid out 2 (M) x 4 (N)
constexpr int WMITER = 2, WNITER = 2;              // sub-tiles per warp tile
constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;  // 32 x 16
constexpr int TM = 4, TN = 4;                      // per thread per sub-tile
constexpr int kLdA = BM + 4;                       // padded As row (k-major): conflict-free stores
static_assert((BM / WM) * (BN / WN) * 32 == kThreads, "one warp per warp tile");
static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "a warp covers one sub-tile");
static_assert(BM * BK / 4 == kThreads && BK * BN / 4 == kThreads, "one float4 of A and of B per thread");
}  // namespace wt

template <bool VEC>
__global__ void __launch_bounds__(wt::kThreads, 2)
    sgemm_warptile(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C) {
  using namespace wt;
  __shared__ __align__(16) float As[2][BK][kLdA];  // transposed, As[buf][k][m]
  __shared__ __align__(16) float Bs[2][BK][BN];
  const int rowBase = blockIdx.y * BM;
  const int colBase = blockIdx.x * BN;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warpRow = warp / (BN / WN);                  // 0..1
  const int warpCol = warp % (BN / WN);                  // 0..3
  const int threadRow = lane / (WSUBN / TN);             // 0..7
  const int threadCol = lane % (WSUBN / TN);             // 0..3
  const int mOff = warpRow * WM + threadRow * TM;        // + wm * WSUBM
  const int nOff = warpCol * WN + threadCol * TN;        // + wn * WSUBN

  // Global -> shared mapping: A row aRow, k = aCol..aCol+3; B row bRow, n = bCol..bCol+3.
  const int aRow = threadIdx.x / (BK / 4), aCol = (threadIdx.x % (BK / 4)) * 4;
  const int bRow = threadIdx.x / (BN / 4), bCol = (threadIdx.x % (BN / 4)) * 4;
  const bool aRowOk = rowBase + aRow < M;
  const float* aPtr = A + static_cast<size_t>(rowBase + aRow) * K + aCol;
  const float* bPtr = B + static_cast<size_t>(bRow) * N + colBase + bCol;

  float acc[WMITER * TM][WNITER * TN] = {};
  float regM[WMITER * TM], regN[WNITER * TN];

  const int tiles = (K + BK - 1) / BK;
  float4 aNext = kl::load4_guarded<VEC>(aPtr, aRowOk, aCol, K);
  float4 bNext = kl::load4_guarded<VEC>(bPtr, bRow < K, colBase + bCol, N);
  As[0][aCol + 0][aRow] = aNext.x;
  As[0][aCol + 1][aRow] = aNext.y;
  As[0][aCol + 2][aRow] = aNext.z;
  As[0][aCol + 3][aRow] = aNext.w;
  *reinterpret_cast<float4*>(&Bs[0][bRow][bCol]) = bNext;
  __syncthreads();

  for (int t = 0; t < tiles; ++t) {
    const int cur = t & 1;
    const bool more = t + 1 < tiles;
    if (more) {  // the next tile's loads are in flight during this tile's math
      const int k0 = (t + 1) * BK;
      aNext = kl::load4_guarded<VEC>(aPtr + k0, aRowOk, k0 + aCol, K);
      bNext = kl::load4_guarded<VEC>(bPtr + static_cast<size_t>(k0) * N, k0 + bRow < K, colBase + bCol, N);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm) {
        const float4 v = *reinterpret_cast<const float4*>(&As[cur][k][mOff + wm * WSUBM]);
        regM[wm * TM + 0] = v.x;
        regM[wm * TM + 1] = v.y;
        regM[wm * TM + 2] = v.z;
        regM[wm * TM + 3] = v.w;
      }
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][nOff + wn * WSUBN]);
        regN[wn * TN + 0] = v.x;
        regN[wn * TN + 1] = v.y;
        regN[wn * TN + 2] = v.z;
        regN[wn * TN + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < WMITER * TM; ++i) {
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += regM[i] * regN[j];
      }
    }
    if (more) {  // the other buffer was last read before the previous barrier
      const int nxt = cur ^ 1;
      As[nxt][aCol + 0][aRow] = aNext.x;
      As[nxt][aCol + 1][aRow] = aNext.y;
      As[nxt][aCol + 2][aRow] = aNext.z;
      As[nxt][aCol + 3][aRow] = aNext.w;
      *reinterpret_cast<float4*>(&Bs[nxt][bRow][bCol]) = bNext;
    }
    __syncthreads();
  }

#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = rowBase + mOff + wm * WSUBM + i;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
        const int col = colBase + nOff + wn * WSUBN;
        const float* a = acc[wm * TM + i] + wn * TN;
        kl::store4_guarded<VEC>(C + static_cast<size_t>(row) * N + col, row < M, col, N,
                                make_float4(a[0], a[1], a[2], a[3]));
      }
    }
  }
}

namespace kl {
namespace {

int warptile(const float* A, const float* B, float* C, int M, int N, int K, int /*config*/, cudaStream_t stream) {
  if (cdiv(M, wt::BM) > kSgemmMaxGridY) return kErrBadSize;
  const dim3 grid(static_cast<unsigned>(cdiv(N, wt::BN)), static_cast<unsigned>(cdiv(M, wt::BM)));
  if (sgemm_float4_ok(A, B, C, N, K)) {
    sgemm_warptile<true><<<grid, wt::kThreads, 0, stream>>>(M, N, K, A, B, C);
  } else {
    sgemm_warptile<false><<<grid, wt::kThreads, 0, stream>>>(M, N, K, A, B, C);
  }
  return launch_status();
}

}  // namespace

KL_STEP(sgemm, warptile);

}  // namespace kl

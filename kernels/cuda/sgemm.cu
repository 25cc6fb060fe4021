// SGEMM, C (M, N) = A (M, K) @ B (K, N), fp32, row-major, any M, N, K: the steps of
// siboehm's worklog ("How to optimize a CUDA matmul kernel for cuBLAS-like performance").
//
//   sgemm_naive         one thread per C element; consecutive threads walk down a column of C,
//                       so their A rows and C writes are strided (uncoalesced).
//   sgemm_coalesced     consecutive threads take consecutive columns: B reads and C writes
//                       coalesce, A is a broadcast.
//   sgemm_smem_tiling   32x32 tiles of A and B staged in shared memory, 1024 threads.
//   sgemm_blocktile_1d  BM=64 BN=64 BK=8, each thread computes TM=8 results of one column.
//   sgemm_blocktile_2d  BM=BN=128 BK=8, each thread an 8x8 register tile (outer products).
//   sgemm_vectorized    blocktile_2d with float4 global loads, A transposed in shared memory
//                       so the 8 A values of a thread are two float4 reads, float4 C stores.
//   sgemm_warptile      warp tiling (siboehm kernel 10): a block of 8 warps on a 128x128 tile,
//                       each warp a 64x32 tile made of 2x2 sub-tiles of 32x16, each thread 2x2
//                       sub-tiles of 4x4 (8x8 results); plus double-buffered shared memory with
//                       the next tile prefetched into registers during the math, one barrier
//                       per BK=8 step, As padded to kill store bank conflicts, 2 blocks per SM.
//
// Every kernel checks bounds, so M, N, K need not be multiples of any tile. The float4 paths
// (VEC=true) need K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B, C; otherwise the launcher
// picks the VEC=false instantiation of the same kernel, which loads and stores scalars.
#include "common.cuh"

// ---- 1. naive ----------------------------------------------------------------------------------

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

// ---- 2. global-memory coalescing ---------------------------------------------------------------

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

// ---- 3. shared-memory tiling -------------------------------------------------------------------

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

// ---- 4. 1D block tiling ------------------------------------------------------------------------

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

// ---- 5. 2D block tiling ------------------------------------------------------------------------

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

// ---- shared pieces of the float4 kernels -------------------------------------------------------

namespace kl {

// Four consecutive floats p[0..3] where p[q] exists only while col + q < limit (row ok).
// VEC: one 16-byte load, valid as a whole (limit % 4 == 0 and col % 4 == 0).
template <bool VEC>
__device__ __forceinline__ float4 load4_guarded(const float* __restrict__ p, bool row_ok, int col, int limit) {
  if constexpr (VEC) {
    return (row_ok && col < limit) ? __ldg(reinterpret_cast<const float4*>(p)) : make_float4(0.f, 0.f, 0.f, 0.f);
  } else {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row_ok) {
      if (col < limit) v.x = __ldg(p);
      if (col + 1 < limit) v.y = __ldg(p + 1);
      if (col + 2 < limit) v.z = __ldg(p + 2);
      if (col + 3 < limit) v.w = __ldg(p + 3);
    }
    return v;
  }
}

template <bool VEC>
__device__ __forceinline__ void store4_guarded(float* __restrict__ p, bool row_ok, int col, int limit,
                                               const float4& v) {
  if (!row_ok) return;
  if constexpr (VEC) {
    if (col < limit) *reinterpret_cast<float4*>(p) = v;
  } else {
    if (col < limit) p[0] = v.x;
    if (col + 1 < limit) p[1] = v.y;
    if (col + 2 < limit) p[2] = v.z;
    if (col + 3 < limit) p[3] = v.w;
  }
}

}  // namespace kl

// ---- 6. vectorized -----------------------------------------------------------------------------

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

// ---- 7. warp tiling ----------------------------------------------------------------------------

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

// ---- launcher ----------------------------------------------------------------------------------

namespace kl {
namespace {

constexpr int64_t kMaxGridY = 65535;

int run_sgemm(const float* A, const float* B, float* C, int M, int N, int K, int variant, cudaStream_t stream) {
  const bool vec = K % 4 == 0 && N % 4 == 0 && aligned16(A) && aligned16(B) && aligned16(C);
  switch (variant) {
    case kSgemmNaive: {
      if (cdiv(N, 32) > kMaxGridY) return kErrBadSize;
      const dim3 grid(static_cast<unsigned>(cdiv(M, 32)), static_cast<unsigned>(cdiv(N, 32)));
      sgemm_naive<<<grid, dim3(32, 32), 0, stream>>>(M, N, K, A, B, C);
      return launch_status();
    }
    case kSgemmCoalesced: {
      if (cdiv(N, kCoalesceTile) > kMaxGridY) return kErrBadSize;
      const dim3 grid(static_cast<unsigned>(cdiv(M, kCoalesceTile)), static_cast<unsigned>(cdiv(N, kCoalesceTile)));
      sgemm_coalesced<<<grid, kCoalesceTile * kCoalesceTile, 0, stream>>>(M, N, K, A, B, C);
      return launch_status();
    }
    case kSgemmSmemTiling: {
      if (cdiv(M, kSmemTile) > kMaxGridY) return kErrBadSize;
      const dim3 grid(static_cast<unsigned>(cdiv(N, kSmemTile)), static_cast<unsigned>(cdiv(M, kSmemTile)));
      sgemm_smem_tiling<<<grid, kSmemTile * kSmemTile, 0, stream>>>(M, N, K, A, B, C);
      return launch_status();
    }
    case kSgemmBlocktile1d: {
      if (cdiv(M, bt1::BM) > kMaxGridY) return kErrBadSize;
      const dim3 grid(static_cast<unsigned>(cdiv(N, bt1::BN)), static_cast<unsigned>(cdiv(M, bt1::BM)));
      sgemm_blocktile_1d<<<grid, bt1::kThreads, 0, stream>>>(M, N, K, A, B, C);
      return launch_status();
    }
    case kSgemmBlocktile2d: {
      if (cdiv(M, bt2::BM) > kMaxGridY) return kErrBadSize;
      const dim3 grid(static_cast<unsigned>(cdiv(N, bt2::BN)), static_cast<unsigned>(cdiv(M, bt2::BM)));
      sgemm_blocktile_2d<<<grid, bt2::kThreads, 0, stream>>>(M, N, K, A, B, C);
      return launch_status();
    }
    case kSgemmVectorized: {
      if (cdiv(M, vz::BM) > kMaxGridY) return kErrBadSize;
      const dim3 grid(static_cast<unsigned>(cdiv(N, vz::BN)), static_cast<unsigned>(cdiv(M, vz::BM)));
      if (vec) {
        sgemm_vectorized<true><<<grid, vz::kThreads, 0, stream>>>(M, N, K, A, B, C);
      } else {
        sgemm_vectorized<false><<<grid, vz::kThreads, 0, stream>>>(M, N, K, A, B, C);
      }
      return launch_status();
    }
    case kSgemmWarptile: {
      if (cdiv(M, wt::BM) > kMaxGridY) return kErrBadSize;
      const dim3 grid(static_cast<unsigned>(cdiv(N, wt::BN)), static_cast<unsigned>(cdiv(M, wt::BM)));
      if (vec) {
        sgemm_warptile<true><<<grid, wt::kThreads, 0, stream>>>(M, N, K, A, B, C);
      } else {
        sgemm_warptile<false><<<grid, wt::kThreads, 0, stream>>>(M, N, K, A, B, C);
      }
      return launch_status();
    }
    default:
      return kErrUnknownVariant;
  }
}

}  // namespace

int sgemm_launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int variant,
                 cudaStream_t stream) {
  if (variant < 0 || variant >= count_of(kSgemmVariants)) return kErrUnknownVariant;
  if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) return kErrBadSize;
  if (m == 0 || n == 0) return kOk;
  if (k == 0) {  // an empty sum: C = 0
    return static_cast<int>(cudaMemsetAsync(c, 0, sizeof(float) * static_cast<size_t>(m) * n, stream));
  }
  return run_sgemm(a, b, c, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), variant, stream);
}

}  // namespace kl

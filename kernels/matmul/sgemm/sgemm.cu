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
//   sgemm_autotuned     a templated warp-tiled kernel with a cp.async multi-stage pipeline,
//                       instantiated for several tile shapes (up to 8x16 results per thread);
//                       the launcher takes the shape's index, Python times them per (M, N, K).
//
// Every kernel checks bounds, so M, N, K need not be multiples of any tile. The float4 paths
// (VEC=true) need K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B, C; otherwise the launcher
// picks the VEC=false instantiation of the same kernel, which loads and stores scalars.
#include <type_traits>

#include "common.cuh"
#include "sgemm.h"

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

// ---- 8. autotuned ------------------------------------------------------------------------------
//
// One templated warp-tiled kernel, several tile shapes (kl::kSgemmAutotunedConfigs); the Python
// side times them once per shape and keeps the fastest. Against warptile it changes:
//   * more results per thread for the big tiles (8x16 = 128 accumulators, 128 or 256 threads
//     at 1-2 blocks per SM): 6 LDS.128 per 128 FFMA instead of 4 per 64. On Hopper an SM
//     sub-partition issues one warp instruction per clock and its 32 FP32 lanes take one FFMA
//     per clock, so every non-FFMA instruction costs an FFMA slot;
//   * an S-stage cp.async pipeline (S = 2..4 tiles in flight, no register staging): A with
//     4-byte copies that transpose it on the fly (8 lanes on 8 consecutive k of a row, so a warp
//     reads 4 full 32-byte sectors per instruction and, with the As row padded to BM + 4, writes
//     32 distinct banks), B with 16-byte copies;
//   * one barrier per BK-deep tile, and the shared -> register fragments double-buffered: the
//     fragments of k + 1 are loaded while the FFMAs of k run, and the barrier of a tile sits
//     just before its last k so that the next tile's first fragments are in flight then too;
//   * no bounds checks in the main loop: rows of A past M and columns of B past N are clamped
//     to the last valid one (they only feed rows / columns of C that are never stored), and
//     only the last, partial BK tile zero-fills its k >= K entries (cp.async src-size 0).
// VEC (N % 4 == 0 and 16-byte aligned B and C) selects 16-byte B copies and float4 C stores;
// otherwise B is copied 4 bytes at a time and C stored per element. A needs no alignment.

namespace kl {

// cp.async global -> shared copies: 4 bytes through L1 (.ca) or 16 bytes through L2 only (.cg).
// With ZFILL, `valid == false` copies nothing and zero-fills the destination (src-size 0; src must
// still be a valid address). Without __CUDA_ARCH__ (host compilation) they are plain copies, so the
// kernel body can be emulated on the CPU.
template <bool ZFILL>
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) {
#ifdef __CUDA_ARCH__
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (ZFILL) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src) : "memory");
  }
#else
  *dst = (!ZFILL || valid) ? *src : 0.0f;
#endif
}

template <bool ZFILL>
__device__ __forceinline__ void cp_async16(float* dst, const float* src, bool valid) {
#ifdef __CUDA_ARCH__
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (ZFILL) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
  }
#else
  for (int q = 0; q < 4; ++q) dst[q] = (!ZFILL || valid) ? src[q] : 0.0f;
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// A tile shape of sgemm_autotuned: block tile BM x BN, BK deep; warp tile WM x WN made of
// WMITER x WNITER sub-tiles; each thread TM x TN results per sub-tile; STAGES tiles in the
// shared-memory ring; MIN_BLOCKS for __launch_bounds__ (caps the registers at
// 65536 / (THREADS * MIN_BLOCKS), at most 255).
template <int BM_, int BN_, int BK_, int WM_, int WN_, int WNITER_, int TM_, int TN_, int THREADS_, int STAGES_,
          int MIN_BLOCKS_>
struct SgemmTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, WNITER = WNITER_, TM = TM_, TN = TN_;
  static constexpr int kThreads = THREADS_, kStages = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER);
  static constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
  static constexpr int FM = WMITER * TM, FN = WNITER * TN;  // a thread's results: FM x FN
  // As[stage][k][m] (A transposed) with rows of BM + 4 floats: the 8 k of one A row, written by 8
  // lanes, land 4 banks apart. Bs[stage][k][n] unpadded (16-byte rows, read 64-128 bytes at a time).
  static constexpr int kLdA = BM + 4, kLdB = BN;
  static constexpr int kStageA = BK * kLdA, kStageB = BK * kLdB;
  static constexpr int kSmemBytes = static_cast<int>(sizeof(float)) * kStages * (kStageA + kStageB);
  // A copies: thread t takes k = t % 8 (+ 8 j) of rows t / 8 + i * kARowStep.
  static constexpr int kARowStep = kThreads / 8, kARows = BM / kARowStep, kAKs = BK / 8;
  // B copies: thread t takes the 4 columns 4 * (t % kBVecs) of rows t / kBVecs + i * kBRowStep.
  static constexpr int kBVecs = BN / 4, kBRowStep = kThreads / kBVecs, kBRows = BK / kBRowStep;

  static_assert(kThreads % 32 == 0 && (BM / WM) * (BN / WN) * 32 == kThreads, "one warp per warp tile");
  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles cover the block tile");
  static_assert(WMITER >= 1 && WMITER * WSUBM == WM && WNITER * WSUBN == WN, "sub-tiles cover the warp tile");
  static_assert((WSUBM / TM) * (WSUBN / TN) == 32 && WSUBM % TM == 0 && WSUBN % TN == 0,
                "a warp covers one sub-tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 fragments");
  static_assert(BK % 8 == 0 && BM % 32 == 0 && BM % kARowStep == 0, "A copy mapping");
  static_assert(kThreads % kBVecs == 0 && BK % kBRowStep == 0, "B copy mapping");
  static_assert(kStages >= 2, "at least double buffering");
};

}  // namespace kl

template <class Tile, bool VEC>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
    sgemm_autotuned(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C) {
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, S = Tile::kStages;
  constexpr int TM = Tile::TM, TN = Tile::TN, WMITER = Tile::WMITER, WNITER = Tile::WNITER;
  constexpr int FM = Tile::FM, FN = Tile::FN, LDA = Tile::kLdA, LDB = Tile::kLdB;
  extern __shared__ __align__(16) float kl_sgemm_smem[];
  float* const As = kl_sgemm_smem;                    // [S][BK][LDA]
  float* const Bs = kl_sgemm_smem + S * Tile::kStageA;  // [S][BK][LDB]

  const int tid = threadIdx.x;
  const int rowBase = blockIdx.y * BM;
  const int colBase = blockIdx.x * BN;

  // ---- global -> shared copy mapping (fixed for the whole K loop)
  const int aK = tid % 8, aR = tid / 8;
  const float* aSrc[Tile::kARows];  // row starts (clamped to M - 1), plus aK
#pragma unroll
  for (int i = 0; i < Tile::kARows; ++i) {
    aSrc[i] = A + static_cast<size_t>(min(rowBase + aR + i * Tile::kARowStep, M - 1)) * K + aK;
  }
  const int bR = tid / Tile::kBVecs, bC = (tid % Tile::kBVecs) * 4;
  const size_t bStep = static_cast<size_t>(Tile::kBRowStep) * N;
  // VEC: the vector clamped to the row's last one (N % 4 == 0); else one column offset per element.
  const float* const bSrc = B + static_cast<size_t>(bR) * N + (VEC ? min(colBase + bC, N - 4) : 0);
  int bCol[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) bCol[q] = min(colBase + bC + q, N - 1);

  const int tiles = (K + BK - 1) / BK;
  const int fullTiles = K / BK;

  // Copy tile `tile` (k0 = tile * BK) into ring slot `stage`; KC: the partial last tile.
  auto load_tile = [&](int stage, int k0, auto kc) {
    constexpr bool KC = decltype(kc)::value;
    float* const as = As + stage * Tile::kStageA + aK * LDA + aR;
#pragma unroll
    for (int j = 0; j < Tile::kAKs; ++j) {
      const bool ok = !KC || k0 + aK + 8 * j < K;
#pragma unroll
      for (int i = 0; i < Tile::kARows; ++i) {
        kl::cp_async4<KC>(as + 8 * j * LDA + i * Tile::kARowStep, ok ? aSrc[i] + k0 + 8 * j : A, ok);
      }
    }
    float* const bs = Bs + stage * Tile::kStageB + bR * LDB + bC;
    const float* const bt = bSrc + static_cast<size_t>(k0) * N;
#pragma unroll
    for (int i = 0; i < Tile::kBRows; ++i) {
      const bool ok = !KC || k0 + bR + i * Tile::kBRowStep < K;
      if constexpr (VEC) {
        kl::cp_async16<KC>(bs + i * Tile::kBRowStep * LDB, ok ? bt + i * bStep : B, ok);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          kl::cp_async4<KC>(bs + i * Tile::kBRowStep * LDB + q, ok ? bt + i * bStep + bCol[q] : B, ok);
        }
      }
    }
  };
  // Copy tile `tile` if there is one, and commit a group either way (the waits count groups).
  auto issue = [&](int tile, int stage) {
    if (tile < fullTiles) {
      load_tile(stage, tile * BK, std::false_type{});
    } else if (tile < tiles) {
      load_tile(stage, tile * BK, std::true_type{});
    }
    kl::cp_async_commit();
  };

  // ---- shared -> register fragments and the FFMAs
  const int warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / (BN / Tile::WN), warpCol = warp % (BN / Tile::WN);
  const int tRow = lane / (Tile::WSUBN / TN), tCol = lane % (Tile::WSUBN / TN);
  const int mOff = warpRow * Tile::WM + tRow * TM;  // + wm * WSUBM
  const int nOff = warpCol * Tile::WN + tCol * TN;  // + wn * WSUBN

  float acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) acc[i][j] = 0.0f;
  }
  float fa[2][FM], fb[2][FN];
  auto load_frag = [&](int buf, const float* as, const float* bs, int k) {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
      for (int q = 0; q < TM; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(as + k * LDA + mOff + wm * Tile::WSUBM + q);
        fa[buf][wm * TM + q + 0] = v.x;
        fa[buf][wm * TM + q + 1] = v.y;
        fa[buf][wm * TM + q + 2] = v.z;
        fa[buf][wm * TM + q + 3] = v.w;
      }
    }
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
      for (int q = 0; q < TN; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(bs + k * LDB + nOff + wn * Tile::WSUBN + q);
        fb[buf][wn * TN + q + 0] = v.x;
        fb[buf][wn * TN + q + 1] = v.y;
        fb[buf][wn * TN + q + 2] = v.z;
        fb[buf][wn * TN + q + 3] = v.w;
      }
    }
  };

  // ---- the pipeline: tiles 0..S-1 in flight, then one tile issued per tile consumed
#pragma unroll
  for (int s = 0; s < S; ++s) issue(s, s);
  kl::cp_async_wait<S - 1>();  // tile 0 has landed (this thread's copies) ...
  __syncthreads();             // ... and everyone's
  int stage = 0;
  load_frag(0, As, Bs, 0);
  for (int t = 0; t < tiles; ++t) {
    const float* const as = As + stage * Tile::kStageA;
    const float* const bs = Bs + stage * Tile::kStageB;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const int cur = k & 1;  // BK is even: k = 0 of every tile uses buffer 0
      if (k + 1 < BK) {
        load_frag(cur ^ 1, as, bs, k + 1);
      } else if (t + 1 < tiles) {
        // Every thread has read all of tile t (its last fragment was loaded at k = BK - 2), so
        // after this barrier its slot takes tile t + S; tile t + 1 must have landed.
        kl::cp_async_wait<S - 2>();
        __syncthreads();
        issue(t + S, stage);
        stage = stage + 1 == S ? 0 : stage + 1;
        load_frag(cur ^ 1, As + stage * Tile::kStageA, Bs + stage * Tile::kStageB, 0);
      }
#pragma unroll
      for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) acc[i][j] = fmaf(fa[cur][i], fb[cur][j], acc[i][j]);
      }
    }
  }

  // ---- epilogue: float4 stores (VEC) or per-element, rows >= M and columns >= N skipped
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = rowBase + mOff + wm * Tile::WSUBM + i;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
        for (int q = 0; q < TN; q += 4) {
          const int col = colBase + nOff + wn * Tile::WSUBN + q;
          const float* a = &acc[wm * TM + i][wn * TN + q];
          kl::store4_guarded<VEC>(C + static_cast<size_t>(row) * N + col, row < M, col, N,
                                  make_float4(a[0], a[1], a[2], a[3]));
        }
      }
    }
  }
}

namespace kl {
// The instantiated tile shapes, in the order of kSgemmAutotunedConfigs (launchers.h).
//                         BM   BN  BK  WM  WN WNITER TM TN threads stages minBlocks
using SgemmTile0 = SgemmTile<128, 128, 8, 64, 64, 4, 4, 4, 128, 4, 2>;
using SgemmTile1 = SgemmTile<128, 128, 16, 64, 64, 4, 4, 4, 128, 3, 2>;
using SgemmTile2 = SgemmTile<128, 256, 8, 64, 64, 4, 4, 4, 256, 3, 1>;
using SgemmTile3 = SgemmTile<256, 128, 8, 64, 64, 4, 4, 4, 256, 3, 1>;
using SgemmTile4 = SgemmTile<128, 128, 16, 64, 32, 2, 4, 4, 256, 3, 2>;
using SgemmTile5 = SgemmTile<128, 64, 16, 64, 32, 2, 4, 4, 128, 3, 3>;
using SgemmTile6 = SgemmTile<64, 128, 16, 32, 64, 4, 4, 4, 128, 3, 3>;
using SgemmTile7 = SgemmTile<64, 64, 16, 32, 32, 2, 4, 4, 128, 3, 4>;
}  // namespace kl

// ---- launcher ----------------------------------------------------------------------------------

namespace kl {
namespace {

constexpr int64_t kMaxGridY = 65535;

// Raise the kernel's dynamic shared-memory limit once per device (not on every launch, so that a
// launch during CUDA-graph capture makes no attribute call).
template <class Tile, bool VEC>
int prepare_autotuned() {
  static std::atomic<bool> ready[kMaxDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    cudaGetLastError();
    return allow_smem(sgemm_autotuned<Tile, VEC>, Tile::kSmemBytes);
  }
  if (ready[dev].load(std::memory_order_acquire)) return kOk;
  const int status = allow_smem(sgemm_autotuned<Tile, VEC>, Tile::kSmemBytes);
  if (status == kOk) ready[dev].store(true, std::memory_order_release);
  return status;
}

template <class Tile>
int launch_autotuned(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  if (cdiv(M, Tile::BM) > kMaxGridY) return kErrBadSize;
  // A is copied 4 bytes at a time: only B (16-byte copies) and C (float4 stores) need alignment.
  const bool vec = N % 4 == 0 && aligned16(B) && aligned16(C);
  auto kernel = vec ? sgemm_autotuned<Tile, true> : sgemm_autotuned<Tile, false>;
  const int status = vec ? prepare_autotuned<Tile, true>() : prepare_autotuned<Tile, false>();
  if (status != kOk) return status;
  const dim3 grid(static_cast<unsigned>(cdiv(N, Tile::BN)), static_cast<unsigned>(cdiv(M, Tile::BM)));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(M, N, K, A, B, C);
  return launch_status();
}

// The launcher's own pick when no config is named: the biggest tile that still gives every SM
// two blocks, else smaller ones (the Python picker times them all instead).
int default_autotuned_config(int M, int N) {
  const int64_t sms = num_sms();
  if (cdiv(M, 128) * cdiv(N, 128) >= 2 * sms) return 0;
  if (cdiv(M, 64) * cdiv(N, 128) >= sms) return 6;
  return 7;
}

int run_autotuned(const float* A, const float* B, float* C, int M, int N, int K, int config, cudaStream_t stream) {
  if (config < 0) config = default_autotuned_config(M, N);
  switch (config) {
    case 0: return launch_autotuned<SgemmTile0>(A, B, C, M, N, K, stream);
    case 1: return launch_autotuned<SgemmTile1>(A, B, C, M, N, K, stream);
    case 2: return launch_autotuned<SgemmTile2>(A, B, C, M, N, K, stream);
    case 3: return launch_autotuned<SgemmTile3>(A, B, C, M, N, K, stream);
    case 4: return launch_autotuned<SgemmTile4>(A, B, C, M, N, K, stream);
    case 5: return launch_autotuned<SgemmTile5>(A, B, C, M, N, K, stream);
    case 6: return launch_autotuned<SgemmTile6>(A, B, C, M, N, K, stream);
    case 7: return launch_autotuned<SgemmTile7>(A, B, C, M, N, K, stream);
    default: return kErrUnknownVariant;
  }
}
static_assert(count_of(kSgemmAutotunedConfigs) == 8, "one name per instantiated tile shape");

int run_sgemm(const float* A, const float* B, float* C, int M, int N, int K, int variant, int config,
              cudaStream_t stream) {
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
    case kSgemmAutotuned:
      return run_autotuned(A, B, C, M, N, K, config, stream);
    default:
      return kErrUnknownVariant;
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

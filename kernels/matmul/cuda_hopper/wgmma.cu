// Hopper GEMM ladder, step wgmma: Hopper's warpgroup MMA fed by TMA. C = A @ B, bf16 (or fp16) in,
// fp32 accumulation, the same type out; A (M, K) and Bt (N, K) row-major (hgemm.h); M, N multiples of 128, K of
// 64. Needs sm_90a (the library built with TORCH_CUDA_ARCH_LIST=9.0a, setup.py's default).
//
// One warpgroup (128 threads) per 128x128 tile of C, as two m64n128 halves: per k16 slice, two
// wgmma.mma_async.m64n128k16 read A and B straight from shared memory through matrix descriptors
// (no ldmatrix, no registers for the operands). Thread 0 brings each 128x64 tile of A and of Bt
// with one cp.async.bulk.tensor (TMA) copy, written in the 128-byte swizzle that the descriptors
// name, and counted in bytes on the stage's mbarrier; everyone waits on that barrier's phase.
// Two stages: the copies of K tile t + 1 are in flight during tile t's wgmma.

#include "common.cuh"
#include "hgemm.h"
#include "hopper_common.cuh"

namespace wg {
constexpr int BM = 128, BN = 128, BK = 64;  // BK: one 128-byte swizzled row of bf16
constexpr int kStages = 2;
constexpr int kThreads = 128;  // one warpgroup
constexpr int kTileA = BM * BK, kTileB = BN * BK;  // elements per stage
constexpr uint32_t kStageBytes = (kTileA + kTileB) * 2;
constexpr size_t kSmem = kStages * kStageBytes + 1024;  // + the slack to align the tiles to 1024 bytes
}  // namespace wg

template <typename T>
__global__ void __launch_bounds__(wg::kThreads, 1)
    hgemm_wgmma(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
                T* __restrict__ C, int M, int N, int K) {
#if KL_SM90A
  using namespace wg;
  using namespace kl::hopper;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full[kStages];
  T* smem = swizzle_aligned<T>(smem_raw);
  T* sA = smem;                      // [stage][BM rows][BK]
  T* sB = smem + kStages * kTileA;   // [stage][BN rows][BK]
  const int tid = threadIdx.x;
  const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
  const int tiles = K / BK;

  auto issue = [&](int t) {  // thread 0: K tile t into stage t % kStages
    const int s = t % kStages;
    mbar_arrive_expect_tx(&full[s], kStageBytes);
    tma_load_2d(sA + s * kTileA, &mapA, t * BK, rowBase, &full[s]);
    tma_load_2d(sB + s * kTileB, &mapB, t * BK, colBase, &full[s]);
  };
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
    mbar_fence_init();
  }
  __syncthreads();
  if (tid == 0) {
    for (int t = 0; t < kStages && t < tiles; ++t) issue(t);
  }

  float d[2][64];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int i = 0; i < 64; ++i) d[m][i] = 0.f;

  for (int t = 0; t < tiles; ++t) {
    const int s = t % kStages;
    mbar_wait(&full[s], (t / kStages) & 1);  // the stage's copies have landed
    fence_regs(d[0]);
    fence_regs(d[1]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const uint64_t db = sw128_desc(sB + s * kTileB + kk * 16);
#pragma unroll
      for (int m = 0; m < 2; ++m) wgmma_m64k16<BN, T>(d[m], sw128_desc(sA + s * kTileA + m * 64 * BK + kk * 16), db);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(d[0]);
    fence_regs(d[1]);
    __syncthreads();  // every warp's wgmma has read stage s: it may be refilled
    if (tid == 0 && t + kStages < tiles) issue(t + kStages);
  }

#pragma unroll
  for (int m = 0; m < 2; ++m)
    store_m64n<BN, T>(d[m], C + static_cast<size_t>(rowBase + 64 * m) * N + colBase, N, tid);
#endif
}

KL_HGEMM_TMA_STEP(wgmma, wg, hgemm_wgmma)

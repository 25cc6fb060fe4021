// Hopper GEMM ladder, step warp_specialized: a producer warpgroup and two consumer warpgroups.
// C = A @ B, bf16 (or fp16) in, fp32 accumulation, the same type out; A (M, K) and Bt (N, K) row-major (hgemm.h);
// M a multiple of 128, N of 256, K of 64. Needs sm_90a.
//
// A block of 3 warpgroups per 128x256 tile of C. Warpgroup 0, the producer, drops to 40 registers
// (setmaxnreg.dec) and one of its threads issues the TMA copies of A (128x64) and Bt (256x64) into
// a ring of 4 stages, each stage guarded by two mbarriers: `full` (the copies landed, counted in
// bytes) and `empty` (every consumer warp has finished reading it). Warpgroups 1 and 2, the
// consumers, raise their registers to 232 (setmaxnreg.inc) and each computes 64 rows x 256 columns
// with wgmma.mma_async.m64n256k16 (128 fp32 accumulators per thread). No __syncthreads in the
// main loop: loads run up to 4 tiles ahead of the math, and the two consumers overlap each other.

#include "common.cuh"
#include "hgemm.h"
#include "hopper_common.cuh"

namespace ws {
constexpr int BM = 128, BN = 256, BK = 64;
constexpr int kStages = 4;
constexpr int kConsumers = 2;                       // warpgroups of 64 rows each
constexpr int kThreads = 128 * (1 + kConsumers);    // the producer warpgroup first
constexpr int kTileA = BM * BK, kTileB = BN * BK;   // elements per stage
constexpr uint32_t kStageBytes = (kTileA + kTileB) * 2;
constexpr size_t kSmem = kStages * kStageBytes + 1024;  // 192 KiB + the slack to align to 1024 bytes
constexpr int kProducerRegs = 40, kConsumerRegs = 232;  // 128 * 40 + 256 * 232 <= 64K registers
static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "the SM's register file");
}  // namespace ws

template <typename T>
__global__ void __launch_bounds__(ws::kThreads, 1)
    hgemm_warp_specialized(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
                           T* __restrict__ C, int M, int N, int K) {
#if KL_SM90A
  using namespace ws;
  using namespace kl::hopper;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  T* smem = swizzle_aligned<T>(smem_raw);
  T* sA = smem;                      // [stage][BM rows][BK], 128-byte swizzle
  T* sB = smem + kStages * kTileA;   // [stage][BN rows][BK]
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
  const int tiles = K / BK;

  init_ring<kStages>(full, empty, kConsumers * 4);

  if (wg == 0) {  // producer
    setmaxnreg_dec<kProducerRegs>();
    if (tid == 0) produce_ring<BM, BN, BK, kStages>(sA, sB, full, empty, &mapA, &mapB, rowBase, colBase, tiles);
    return;
  }

  // consumers: warpgroup wg computes rows 64 (wg - 1) .. 64 wg - 1 of the tile
  setmaxnreg_inc<kConsumerRegs>();
  const int half = wg - 1;
  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
  for (int t = 0; t < tiles; ++t) {
    const int s = t % kStages;
    mbar_wait(&full[s], (t / kStages) & 1);
    fence_regs(d);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma_m64k16<BN, T>(d, sw128_desc(sA + s * kTileA + half * 64 * BK + kk * 16), sw128_desc(sB + s * kTileB + kk * 16));
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(d);
    if (tid % 32 == 0) mbar_arrive(&empty[s]);  // this warp is done reading stage s
  }
  store_m64n<BN, T>(d, C + static_cast<size_t>(rowBase + 64 * half) * N + colBase, N, tid);
#endif
}

KL_HGEMM_TMA_STEP(warp_specialized, ws, hgemm_warp_specialized)

// Hopper GEMM ladder, step in_flight: warp_specialized with one wgmma group kept in flight.
// C = A @ B, bf16 (or fp16) in, fp32 accumulation, the same type out; A (M, K) and Bt (N, K) row-major (hgemm.h);
// M a multiple of 128, N of 256, K of 64. Needs sm_90a.
//
// The same block as warp_specialized (a producer warpgroup filling a 4-stage TMA ring, two consumer
// warpgroups of 64x256 wgmma), with one change in the consumers' loop: after issuing K tile t they
// wait only for tile t-1's group (wgmma.wait_group 1) and release tile t-1's stage, so the tensor
// cores always hold the next tile's MMAs while a consumer waits, instead of draining (wait_group 0)
// before every release. Successive groups accumulate into the same registers, which the hardware
// orders within a warpgroup; the accumulators are read only after the final wait_group 0, and no
// instruction but wgmma writes them (the first one starts them from zero: scale-d 0), or ptxas
// serializes the groups again.

#include "common.cuh"
#include "hgemm.h"
#include "hopper_common.cuh"

namespace in_flight {
constexpr int BM = 128, BN = 256, BK = 64;
constexpr int kStages = 4;
constexpr int kConsumers = 2;                       // warpgroups of 64 rows each
constexpr int kThreads = 128 * (1 + kConsumers);    // the producer warpgroup first
constexpr int kTileA = BM * BK, kTileB = BN * BK;   // elements per stage
constexpr size_t kSmem = kStages * (kTileA + kTileB) * 2 + 1024;  // 192 KiB + the slack to align to 1024 bytes
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "the SM's register file");
}  // namespace in_flight

template <typename T>
__global__ void __launch_bounds__(in_flight::kThreads, 1)
    hgemm_in_flight(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
                    T* __restrict__ C, int M, int N, int K) {
#if KL_SM90A
  using namespace in_flight;
  using namespace kl::hopper;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  T* sA = swizzle_aligned<T>(smem_raw);  // [stage][BM rows][BK], 128-byte swizzle
  T* sB = sA + kStages * kTileA;         // [stage][BN rows][BK]
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
  const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
  const int tiles = K / BK;
  init_ring<kStages>(full, empty, kConsumers * 4);

  if (wg == 0) {  // producer
    setmaxnreg_dec<kProducerRegs>();
    if (tid == 0) produce_ring<BM, BN, BK, kStages>(sA, sB, full, empty, &mapA, &mapB, rowBase, colBase, tiles);
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int half = wg - 1;  // rows 64 half .. 64 half + 63 of the tile
  float d[BN / 2];  // no zero fill: the first tile's first wgmma starts it (scale_d 0)
  for (int t = 0; t < tiles; ++t) {
    const int s = t % kStages;
    mbar_wait(&full[s], (t / kStages) & 1);
    fence_regs(d);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
      wgmma_m64k16<BN, T>(d, sw128_desc(sA + s * kTileA + half * 64 * BK + kk * 16), sw128_desc(sB + s * kTileB + kk * 16),
                          t > 0 || kk > 0);
    wgmma_commit();
    wgmma_wait<1>();  // tile t-1's group is done: its stage can be refilled while tile t's runs
    fence_regs(d);
    if (t > 0 && tid % 32 == 0) mbar_arrive(&empty[(t - 1) % kStages]);
  }
  wgmma_wait<0>();
  fence_regs(d);
  store_m64n<BN, T>(d, C + static_cast<size_t>(rowBase + 64 * half) * N + colBase, N, tid);
#endif
}

KL_HGEMM_TMA_STEP(in_flight, in_flight, hgemm_in_flight)

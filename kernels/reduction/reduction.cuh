// What the reduction steps share: the block size of the one-element-per-thread steps, and the
// warp-shuffle block sum (warp_shuffle, vec4).
#pragma once

#include "common.cuh"
#include "reduction.h"

constexpr int kReduceThreads = 256;

namespace kl {

// Warp sum with __shfl_down_sync: lane 0 ends with the total.
__device__ __forceinline__ float warp_sum_down(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Sum of the block's values into *out with one atomic: warp shuffles, then warp 0 over the
// warp sums. Every thread of the block must call it.
__device__ __forceinline__ void block_sum_atomic(float v, float* out) {
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_sum_down(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
    v = warp_sum_down(v);
    if (lane == 0) atomicAdd(out, v);
  }
}

}  // namespace kl

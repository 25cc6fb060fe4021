// What the row_sum steps share: the one-warp-per-row kernel (the warp step, and the cluster step's
// fallback) and its launcher.
//
// row_sum_warp: one warp per row (8 rows per block of 256), 16-byte loads when cols % 4 == 0
// (fp32) or cols % 8 == 0 (bf16), out[row] fp32, no atomics.
#pragma once

#include "common.cuh"
#include "row_sum.h"

constexpr int kRowSumThreads = 256;

template <typename T, bool VEC>
__global__ void __launch_bounds__(kRowSumThreads)
    row_sum_warp(const T* __restrict__ x, float* __restrict__ out, int64_t rows, int cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kRowSumThreads / 32) + (threadIdx.x >> 5);
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x & 31;
  const T* xr = x + row * cols;
  float s0 = 0.0f, s1 = 0.0f;
  if constexpr (VEC) {
    constexpr int N = kl::Pack<T>::N;
    const int nvec = cols / N;
    int v = lane;
    for (; v + 32 < nvec; v += 64) {  // two vectors in flight per lane
      float f[N], g[N];
      kl::Pack<T>::unpack(kl::load16(xr, v), f);
      kl::Pack<T>::unpack(kl::load16(xr, v + 32), g);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        s0 += f[j];
        s1 += g[j];
      }
    }
    if (v < nvec) {
      float f[N];
      kl::Pack<T>::unpack(kl::load16(xr, v), f);
#pragma unroll
      for (int j = 0; j < N; ++j) s0 += f[j];
    }
  } else {
#pragma unroll 4
    for (int i = lane; i < cols; i += 32) s0 += kl::to_float(xr[i]);
  }
  const float s = kl::warp_sum(s0 + s1);
  if (lane == 0) out[row] = s;
}

namespace kl {

template <typename T>
int launch_row_sum_warp(const T* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x);
  const int64_t blocks = cdiv(rows, kRowSumThreads / 32);
  if (blocks > INT_MAX) return kErrBadSize;
  if (vec) {
    row_sum_warp<T, true><<<static_cast<unsigned>(blocks), kRowSumThreads, 0, stream>>>(
        x, out, rows, static_cast<int>(cols));
  } else {
    row_sum_warp<T, false><<<static_cast<unsigned>(blocks), kRowSumThreads, 0, stream>>>(
        x, out, rows, static_cast<int>(cols));
  }
  return launch_status();
}

}  // namespace kl

// A step's launcher from its typed call: the dtype switch and the cast, x typed const T*.
#define KL_ROW_SUM_STEP(name, call)                                                                      \
  int name(const void* xv, float* out, int64_t rows, int64_t cols, DType dtype, cudaStream_t stream) { \
    return by_dtype(dtype, [&](auto t) {                                                                 \
      using T = typename decltype(t)::type;                                                              \
      const T* x = static_cast<const T*>(xv);                                                            \
      return call;                                                                                       \
    });                                                                                                  \
  }

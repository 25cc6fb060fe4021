// What the softmax steps share: the one-block-per-row kernel (the block step, and the other steps'
// fallback for rows they cannot take) and its launcher.
//
// softmax_block: the row is read from global memory once into an fp32 copy in shared memory
// (dynamic, up to the device's opt-in limit, 227 KB on Hopper: about 58K columns), then
// max -> sum of exp -> scaled write all run from shared memory. Rows too long for shared
// memory take three passes over global memory (max, sum of exp, write). Block reductions
// are warp shuffles plus one shared-memory step; everything accumulates in fp32. Loads and
// stores are 16 bytes wide when cols % 4 == 0 (fp32) or cols % 8 == 0 (bf16) and the
// pointers are aligned, else scalar (cols = 1000 for bf16, 1001 for either).
#pragma once

#include "common.cuh"
#include "softmax.h"

template <typename T, bool VEC, bool CACHED>
__global__ void __launch_bounds__(1024) softmax_block(const T* __restrict__ x, T* __restrict__ out, int cols) {
  using IO = kl::RowIO<T, VEC>;
  constexpr int N = IO::N;
  extern __shared__ __align__(16) float smem[];
  float* scratch = smem;
  float* cache = smem + kl::kRowScratchFloats;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* yr = out + row * cols;
  const int units = cols / N;

  float m = -INFINITY;
  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    float f[N];
    IO::load(xr, u, f);
    if constexpr (CACHED) IO::cache_store(cache, u, f);
#pragma unroll
    for (int j = 0; j < N; ++j) m = fmaxf(m, f[j]);
  }
  m = kl::block_max(m, scratch);

  float s = 0.0f;
  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    float f[N];
    if constexpr (CACHED) {
      IO::cache_load(cache, u, f);
    } else {
      IO::load(xr, u, f);
    }
#pragma unroll
    for (int j = 0; j < N; ++j) {
      f[j] = expf(f[j] - m);
      s += f[j];
    }
    if constexpr (CACHED) IO::cache_store(cache, u, f);
  }
  s = kl::block_sum(s, scratch);
  const float inv = 1.0f / s;

  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    float f[N];
    if constexpr (CACHED) {
      IO::cache_load(cache, u, f);
#pragma unroll
      for (int j = 0; j < N; ++j) f[j] *= inv;
    } else {
      IO::load(xr, u, f);
#pragma unroll
      for (int j = 0; j < N; ++j) f[j] = expf(f[j] - m) * inv;
    }
    IO::store(yr, u, f);
  }
}

namespace kl {

template <typename T, bool VEC, bool CACHED>
inline int launch_softmax(const T* x, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  auto kernel = softmax_block<T, VEC, CACHED>;
  const size_t smem = row_smem_bytes(cols, CACHED);
  const int status = allow_smem(kernel, smem);
  if (status != kOk) return status;
  const int threads = row_block_threads(VEC ? cols / Pack<T>::N : cols);
  kernel<<<static_cast<unsigned>(rows), threads, smem, stream>>>(x, out, static_cast<int>(cols));
  return launch_status();
}

// The block kernel for this row: 16-byte accesses where the row and pointers allow, the row cached
// in shared memory where it fits.
template <typename T>
int launch_softmax_block(const T* x, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(out);
  const bool cached = row_fits_smem(cols);
  if (vec) {
    return cached ? launch_softmax<T, true, true>(x, out, rows, cols, stream)
                  : launch_softmax<T, true, false>(x, out, rows, cols, stream);
  }
  return cached ? launch_softmax<T, false, true>(x, out, rows, cols, stream)
                : launch_softmax<T, false, false>(x, out, rows, cols, stream);
}

}  // namespace kl

// A step's launcher from its typed call: the dtype switch and the casts, x and out typed T*.
#define KL_SOFTMAX_STEP(name, call)                                                                     \
  int name(const void* xv, void* outv, int64_t rows, int64_t cols, DType dtype, cudaStream_t stream) { \
    return by_dtype(dtype, [&](auto t) {                                                                \
      using T = typename decltype(t)::type;                                                             \
      const T* x = static_cast<const T*>(xv);                                                           \
      T* out = static_cast<T*>(outv);                                                                   \
      return call;                                                                                      \
    });                                                                                                 \
  }

// What the rms_norm steps share: the one-block-per-row kernel (the block step, and every step's
// fallback), the staged kernel (the staged and prefetch steps, and the resident steps' fallback) and
// the resident kernel (the resident and resident3 steps), with their launchers.
//
// RMS norm over the last dimension of a (rows, cols) matrix, one block per row:
// out = x * rsqrt(mean(x^2) + eps) * w.
//
// rms_norm_block: the row is read once into an fp32 copy in shared memory (when it fits,
// about 58K columns on Hopper); the sum of squares and the scaled write run from that copy.
// Longer rows read global memory twice. fp32 statistics; 16-byte loads and stores when
// cols % 4 == 0 (fp32) or cols % 8 == 0 (bf16) and the pointers are aligned, else scalar.
//
// rms_norm_cluster (sm_90): the row split across a thread-block cluster, each CTA's slice in
// registers (row_cluster.cuh); one cluster reduction of the squares, the weight loads issued
// before it. One read of x.
//
// rms_norm_staged (sm_90): one row per CTA staged in shared memory in its own dtype by bulk
// copies (row_stage.cuh); the sum of squares and the write read that copy. PREFETCH (the
// prefetch step): the write pass's first weight loads are issued before the row has arrived.
// Rows that cannot be staged take rms_norm_block.
//
// rms_norm_resident (sm_90): persistent CTAs, the weight in registers (loaded once per CTA),
// rows staged through S buffers (row_stage.cuh, resident_rows): S = 2 (the resident step) or 3
// (resident3). Rows too long for it take rms_norm_staged with prefetch, or rms_norm_block.
#pragma once

#include "common.cuh"
#include "rms_norm.h"
#include "row_stage.cuh"

template <typename T, bool VEC, bool CACHED>
__global__ void __launch_bounds__(1024)
    rms_norm_block(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ out, int cols, float eps) {
  using IO = kl::RowIO<T, VEC>;
  constexpr int N = IO::N;
  extern __shared__ __align__(16) float smem[];
  const kl::BlockRow<T, VEC> r(smem, x, out, cols);

  const float ss = r.template first_pass<CACHED>([](float v) { return v * v; });
  const float rstd = rsqrtf(kl::block_sum(ss, r.scratch) / static_cast<float>(cols) + eps);

  for (int u = threadIdx.x; u < r.units; u += blockDim.x) {
    float f[N], wf[N];
    r.template reload<CACHED>(u, f);
    IO::load(w, u, wf);
#pragma unroll
    for (int j = 0; j < N; ++j) f[j] = f[j] * rstd * wf[j];
    IO::store(r.yr, u, f);
  }
}

template <typename T, bool PREFETCH>
__global__ void __launch_bounds__(kl::kStageThreads)
    rms_norm_staged(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ out, int cols, float eps) {
#if KL_SM90_BODY
  using P = kl::Pack<T>;
  constexpr int N = P::N;
  extern __shared__ __align__(128) uint4 staged[];
  __shared__ float scratch[32];
  __shared__ __align__(8) uint64_t bar;
  const int64_t row = blockIdx.x;
  const int units = cols / N;
  const T* const params[1] = {w};
  kl::ParamStep<T, 1> step;
  if constexpr (PREFETCH) step.load(params, threadIdx.x, units);
  kl::stage_row(staged, x + row * cols, static_cast<uint32_t>(cols * sizeof(T)), &bar);
  const float ss = kl::staged_fold<T>(staged, units, 0.0f, [](float a, float v) { return a + v * v; });
  const float rstd = rsqrtf(kl::block_sum(ss, scratch) / static_cast<float>(cols) + eps);
  if constexpr (!PREFETCH) step.load(params, threadIdx.x, units);
  kl::staged_write(staged, units, params, out + row * cols, step, [rstd](float(&v)[N], const float(&q)[1][N]) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = v[j] * rstd * q[0][j];
  });
#endif
}

template <typename T, int S>
__global__ void __launch_bounds__(1024)
    rms_norm_resident(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ out, int64_t rows, int cols,
                      float eps) {
#if KL_SM90_BODY
  using P = kl::Pack<T>;
  constexpr int N = P::N;
  extern __shared__ __align__(128) uint4 staged[];
  __shared__ float scratch[32];
  __shared__ __align__(8) uint64_t bars[S];
  const int units = cols / N;
  const T* const params[1] = {w};
  kl::ParamStep<T, 1, kl::kResidentVecs> step;  // the whole row's share of this thread, held
  step.load(params, threadIdx.x, units);
  kl::resident_rows<S>(staged, reinterpret_cast<const char*>(x), rows, units, bars, [&](int64_t row, const uint4* row_buf) {
    const float ss = kl::staged_fold<T>(row_buf, units, 0.0f, [](float a, float v) { return a + v * v; });
    const float rstd = rsqrtf(kl::block_sum(ss, scratch) / static_cast<float>(cols) + eps);
    kl::staged_write(row_buf, units, params, out + row * cols, step, [rstd](float(&v)[N], const float(&q)[1][N]) {
#pragma unroll
      for (int j = 0; j < N; ++j) v[j] = v[j] * rstd * q[0][j];
    });
  });
#endif
}

namespace kl {

template <typename T, bool VEC, bool CACHED>
inline int launch_rms_norm(const T* x, const T* w, T* out, int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  auto kernel = rms_norm_block<T, VEC, CACHED>;
  const size_t smem = row_smem_bytes(cols, CACHED);
  const int status = allow_smem(kernel, smem);
  if (status != kOk) return status;
  const int threads = row_block_threads(VEC ? cols / Pack<T>::N : cols);
  kernel<<<static_cast<unsigned>(rows), threads, smem, stream>>>(x, w, out, static_cast<int>(cols), eps);
  return launch_status();
}

// The block kernel for this row: 16-byte accesses where the row and pointers allow, the row cached
// in shared memory where it fits.
template <typename T>
int launch_rms_norm_block(const T* x, const T* w, T* out, int64_t rows, int64_t cols, float eps,
                          cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(w) && aligned16(out);
  const bool cached = row_fits_smem(cols);
  if (vec) {
    return cached ? launch_rms_norm<T, true, true>(x, w, out, rows, cols, eps, stream)
                  : launch_rms_norm<T, true, false>(x, w, out, rows, cols, eps, stream);
  }
  return cached ? launch_rms_norm<T, false, true>(x, w, out, rows, cols, eps, stream)
                : launch_rms_norm<T, false, false>(x, w, out, rows, cols, eps, stream);
}

// The staged kernel (PREFETCH: the prefetch step's instantiation) where the row can be staged, else
// the block kernel.
template <typename T, bool PREFETCH>
int launch_rms_norm_staged(const T* x, const T* w, T* out, int64_t rows, int64_t cols, float eps,
                           cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(w) && aligned16(out);
  const int64_t units = cols / Pack<T>::N;
  if (staged_rows_fit(cols * sizeof(T), vec)) {
    return launch_staged_rows(rms_norm_staged<T, PREFETCH>, rows, cols * sizeof(T), staged_threads(units), stream,
                              x, w, out, static_cast<int>(cols), eps);
  }
  return launch_rms_norm_block(x, w, out, rows, cols, eps, stream);
}

// The resident kernel with S row buffers where the rows fit, else the staged kernel with prefetch.
template <typename T, int S>
int launch_rms_norm_resident(const T* x, const T* w, T* out, int64_t rows, int64_t cols, float eps,
                             cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(w) && aligned16(out);
  const int64_t units = cols / Pack<T>::N;
  if (resident_rows_fit(cols * sizeof(T), vec, S)) {
    return launch_resident_rows(rms_norm_resident<T, S>, rows, cols * sizeof(T), S, resident_threads(units), stream,
                                x, w, out, rows, static_cast<int>(cols), eps);
  }
  return launch_rms_norm_staged<T, true>(x, w, out, rows, cols, eps, stream);
}

}  // namespace kl

// A step's launcher from its typed call: the dtype switch and the casts, x, w, out typed T*.
#define KL_RMS_NORM_STEP(name, call)                                                                      \
  int name(const void* xv, const void* wv, void* outv, int64_t rows, int64_t cols, float eps, DType dtype, \
           cudaStream_t stream) {                                                                          \
    return by_dtype(dtype, [&](auto t) {                                                                   \
      using T = typename decltype(t)::type;                                                                \
      const T* x = static_cast<const T*>(xv);                                                              \
      const T* w = static_cast<const T*>(wv);                                                              \
      T* out = static_cast<T*>(outv);                                                                      \
      return call;                                                                                         \
    });                                                                                                    \
  }

// What the layer_norm steps share: the one-block-per-row kernel (the block step, and every step's
// last fallback), the staged kernels (staged, prefetch and onepass, the resident steps' fallback;
// the lean step's body) and the resident kernel (resident, resident3, onepass_resident), with the
// launchers that keep each step's fallback chain.
//
// Layer norm over the last dimension of a (rows, cols) matrix, one block per row:
// out = (x - mean) * rsqrt(var + eps) * w + b, with the biased variance (as torch).
//
// layer_norm_block: the row is read once into an fp32 copy in shared memory (when it fits,
// about 58K columns on Hopper), then mean and variance come from two passes over that copy
// (two-pass variance: no cancellation), and the normalized row is written. Longer rows read
// global memory three times. fp32 statistics; 16-byte loads and stores when cols % 4 == 0
// (fp32) or cols % 8 == 0 (bf16) and the pointers are aligned, else scalar.
//
// layer_norm_cluster (sm_90): the row split across a thread-block cluster, each CTA's slice
// in registers (row_cluster.cuh); mean, then the centered variance, each one cluster
// reduction; weight and bias loads issued before the first reduction. One read of x.
//
// layer_norm_staged (sm_90): one row per CTA staged in shared memory in its own dtype by bulk
// copies (row_stage.cuh); mean, centered variance and the write read that copy. PREFETCH (the
// prefetch step): the write pass's first weight and bias loads are issued before the row has
// arrived, so that their latency passes during the statistics. Rows that cannot be staged take
// layer_norm_block.
//
// layer_norm_resident (sm_90): persistent CTAs, weight and bias in registers (loaded once per
// CTA, not once per row from L2), rows staged through S buffers (row_stage.cuh,
// resident_rows): the next S - 1 rows' copies land while the current one is reduced and
// written; S = 2 (the resident step) or 3 (resident3). Rows too long for it take
// layer_norm_staged with prefetch, or layer_norm_block.
//
// ONEPASS (the onepass and onepass_resident steps): the staged kernel with prefetch, or the
// resident one with two buffers, taking mean and variance from one pass over the staged row
// (each thread's Moments, one block reduction) instead of two passes and two reductions.
//
// layer_norm_lean (the lean step): onepass's staged kernel with two vectors per write step
// instead of four (the weight and bias loads a thread holds at once), in 32 registers, so
// that eight CTAs of 256 threads share an SM where the 48 registers of four left room for five.
#pragma once

#include "common.cuh"
#include "layer_norm.h"
#include "row_stage.cuh"

template <typename T, bool VEC, bool CACHED>
__global__ void __launch_bounds__(1024)
    layer_norm_block(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                     T* __restrict__ out, int cols, float eps) {
  using IO = kl::RowIO<T, VEC>;
  constexpr int N = IO::N;
  extern __shared__ __align__(16) float smem[];
  const kl::BlockRow<T, VEC> r(smem, x, out, cols);

  const float s = r.template first_pass<CACHED>([](float v) { return v; });
  const float mean = kl::block_sum(s, r.scratch) / static_cast<float>(cols);

  float ss = 0.0f;
  for (int u = threadIdx.x; u < r.units; u += blockDim.x) {
    float f[N];
    r.template reload<CACHED>(u, f);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const float d = f[j] - mean;
      ss += d * d;
    }
  }
  const float rstd = rsqrtf(kl::block_sum(ss, r.scratch) / static_cast<float>(cols) + eps);

  for (int u = threadIdx.x; u < r.units; u += blockDim.x) {
    float f[N], wf[N], bf[N];
    r.template reload<CACHED>(u, f);
    IO::load(w, u, wf);
    IO::load(b, u, bf);
#pragma unroll
    for (int j = 0; j < N; ++j) f[j] = (f[j] - mean) * rstd * wf[j] + bf[j];
    IO::store(r.yr, u, f);
  }
}

// Mean and rstd of a staged row: the mean, then the centred variance (two passes, two block
// reductions), or ONEPASS: both from one pass, merged as Moments in one block reduction.
// `scratch`: 96 floats.
template <typename T, bool ONEPASS>
__device__ __forceinline__ float2 staged_stats(const uint4* row, int units, float inv_cols, float eps,
                                               float* scratch) {
  if constexpr (ONEPASS) {
    const kl::Moments m = kl::block_moments(kl::staged_moments<T>(row, units), scratch);
    return make_float2(m.mean, rsqrtf(m.m2 * inv_cols + eps));
  } else {
    const float s = kl::staged_fold<T>(row, units, 0.0f, [](float a, float v) { return a + v; });
    const float mean = kl::block_sum(s, scratch) * inv_cols;
    const float ss = kl::staged_fold<T>(row, units, 0.0f, [mean](float a, float v) {
      return a + (v - mean) * (v - mean);
    });
    return make_float2(mean, rsqrtf(kl::block_sum(ss, scratch) * inv_cols + eps));
  }
}

// One staged row, K vectors per write step: the body of layer_norm_staged and layer_norm_lean.
template <typename T, bool PREFETCH, bool ONEPASS, int K>
__device__ __forceinline__ void staged_row(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                           T* __restrict__ out, int cols, float eps) {
  using P = kl::Pack<T>;
  constexpr int N = P::N;
  extern __shared__ __align__(128) uint4 staged[];
  __shared__ float scratch[ONEPASS ? 96 : 32];
  __shared__ __align__(8) uint64_t bar;
  const int64_t row = blockIdx.x;
  const int units = cols / N;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const T* const params[2] = {w, b};
  kl::ParamStep<T, 2, K> step;
  if constexpr (PREFETCH) step.load(params, threadIdx.x, units);
  kl::stage_row(staged, x + row * cols, static_cast<uint32_t>(cols * sizeof(T)), &bar);
  const float2 stats = staged_stats<T, ONEPASS>(staged, units, inv_cols, eps, scratch);
  const float mean = stats.x, rstd = stats.y;
  if constexpr (!PREFETCH) step.load(params, threadIdx.x, units);
  kl::staged_write(staged, units, params, out + row * cols, step, [mean, rstd](float(&v)[N], const float(&q)[2][N]) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = (v[j] - mean) * rstd * q[0][j] + q[1][j];
  });
}

template <typename T, bool PREFETCH, bool ONEPASS>
__global__ void __launch_bounds__(kl::kStageThreads)
    layer_norm_staged(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                      T* __restrict__ out, int cols, float eps) {
#if KL_SM90_BODY
  staged_row<T, PREFETCH, ONEPASS, 4>(x, w, b, out, cols, eps);
#endif
}

template <typename T, int S, bool ONEPASS>
__global__ void __launch_bounds__(1024)
    layer_norm_resident(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                        T* __restrict__ out, int64_t rows, int cols, float eps) {
#if KL_SM90_BODY
  using P = kl::Pack<T>;
  constexpr int N = P::N;
  extern __shared__ __align__(128) uint4 staged[];
  __shared__ float scratch[ONEPASS ? 96 : 32];
  __shared__ __align__(8) uint64_t bars[S];
  const int units = cols / N;
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const T* const params[2] = {w, b};
  kl::ParamStep<T, 2, kl::kResidentVecs> step;  // the whole row's share of this thread, held
  step.load(params, threadIdx.x, units);
  kl::resident_rows<S>(staged, reinterpret_cast<const char*>(x), rows, units, bars, [&](int64_t row, const uint4* row_buf) {
    const float2 stats = staged_stats<T, ONEPASS>(row_buf, units, inv_cols, eps, scratch);
    const float mean = stats.x, rstd = stats.y;
    kl::staged_write(row_buf, units, params, out + row * cols, step,
                     [mean, rstd](float(&v)[N], const float(&q)[2][N]) {
#pragma unroll
                       for (int j = 0; j < N; ++j) v[j] = (v[j] - mean) * rstd * q[0][j] + q[1][j];
                     });
  });
#endif
}

namespace kl {

template <typename T, bool VEC, bool CACHED>
inline int launch_layer_norm(const T* x, const T* w, const T* b, T* out, int64_t rows, int64_t cols, float eps,
                      cudaStream_t stream) {
  auto kernel = layer_norm_block<T, VEC, CACHED>;
  const size_t smem = row_smem_bytes(cols, CACHED);
  const int status = allow_smem(kernel, smem);
  if (status != kOk) return status;
  const int threads = row_block_threads(VEC ? cols / Pack<T>::N : cols);
  kernel<<<static_cast<unsigned>(rows), threads, smem, stream>>>(x, w, b, out, static_cast<int>(cols), eps);
  return launch_status();
}

// The block kernel for this row: 16-byte accesses where the row and pointers allow, the row cached
// in shared memory where it fits.
template <typename T>
int launch_layer_norm_block(const T* x, const T* w, const T* b, T* out, int64_t rows, int64_t cols, float eps,
                            cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(w) && aligned16(b) && aligned16(out);
  const bool cached = row_fits_smem(cols);
  if (vec) {
    return cached ? launch_layer_norm<T, true, true>(x, w, b, out, rows, cols, eps, stream)
                  : launch_layer_norm<T, true, false>(x, w, b, out, rows, cols, eps, stream);
  }
  return cached ? launch_layer_norm<T, false, true>(x, w, b, out, rows, cols, eps, stream)
                : launch_layer_norm<T, false, false>(x, w, b, out, rows, cols, eps, stream);
}

// A staged kernel where the row can be staged (`kernel`: an instantiation of layer_norm_staged or
// layer_norm_lean), else the block kernel.
template <typename T, typename Kernel>
int launch_layer_norm_staged(Kernel kernel, const T* x, const T* w, const T* b, T* out, int64_t rows, int64_t cols,
                             float eps, cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(w) && aligned16(b) && aligned16(out);
  const int64_t units = cols / Pack<T>::N;
  if (staged_rows_fit(cols * sizeof(T), vec)) {
    return launch_staged_rows(kernel, rows, cols * sizeof(T), staged_threads(units), stream, x, w, b, out,
                              static_cast<int>(cols), eps);
  }
  return launch_layer_norm_block(x, w, b, out, rows, cols, eps, stream);
}

// The resident kernel with S row buffers where the rows fit, else the staged kernel with prefetch
// (and ONEPASS statistics where the resident kernel has them).
template <typename T, int S, bool ONEPASS>
int launch_layer_norm_resident(const T* x, const T* w, const T* b, T* out, int64_t rows, int64_t cols, float eps,
                               cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(w) && aligned16(b) && aligned16(out);
  const int64_t units = cols / Pack<T>::N;
  if (resident_rows_fit(cols * sizeof(T), vec, S)) {
    return launch_resident_rows(layer_norm_resident<T, S, ONEPASS>, rows, cols * sizeof(T), S,
                                resident_threads(units), stream, x, w, b, out, rows, static_cast<int>(cols), eps);
  }
  return launch_layer_norm_staged(layer_norm_staged<T, true, ONEPASS>, x, w, b, out, rows, cols, eps, stream);
}

}  // namespace kl

// A step's launcher from its typed call: the dtype switch and the casts, x, w, b, out typed T*.
#define KL_LAYER_NORM_STEP(name, call)                                                                    \
  int name(const void* xv, const void* wv, const void* bv, void* outv, int64_t rows, int64_t cols, float eps, \
           DType dtype, cudaStream_t stream) {                                                             \
    return by_dtype(dtype, [&](auto t) {                                                                   \
      using T = typename decltype(t)::type;                                                                \
      const T* x = static_cast<const T*>(xv);                                                              \
      const T* w = static_cast<const T*>(wv);                                                              \
      const T* b = static_cast<const T*>(bv);                                                              \
      T* out = static_cast<T*>(outv);                                                                      \
      return call;                                                                                         \
    });                                                                                                    \
  }

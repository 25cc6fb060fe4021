// What the rms_norm backward steps (cuda_bwd/) share: one row kernel, whose dw accumulator is the
// step's choice, and the kernel that sums dw's fp32 partial rows into dw.
//
// Per row, with xhat = x * rstd (rstd: the forward's fp32 statistic):
//   dx = rstd * (w dy - xhat * c),  c = mean(w dy xhat) = rstd * sum(w dy x) / cols
//   dw += dy * xhat  (summed over the rows)
// Two passes over the row: the first sums w dy x (one block reduction), the second writes dx and
// adds to dw; the second re-reads x, dy and w, mostly from L1/L2. fp32 arithmetic throughout.
//
// rms_norm_bwd_rows<T, VEC, ACC>: VEC, 16-byte vectors (cols % N == 0 and aligned pointers) or
// scalars; ACC, where dw accumulates:
//   kAtomic: atomicAdd into one fp32 row shared by every block (the block_atomic step);
//   kShared: the block's own fp32 row in shared memory, written out once as the block's partial
//            row at the end (block_partials, persistent);
//   kGlobal: the block's own partial row in global memory, for rows too long for shared memory.
// Each thread owns the same columns in every pass and every row, so a private accumulator needs
// no synchronisation. Rows: group > 0, rows [b * group, (b + 1) * group) of block b; group == 0,
// rows b, b + gridDim.x, ... (persistent blocks).
#pragma once

#include "common.cuh"
#include "rms_norm.h"

namespace kl {

enum class DwAcc { kAtomic, kShared, kGlobal };

}  // namespace kl

// (1024, 1): without the 1, ptxas held the fp32 vector instantiation to 32 registers and spilled.
template <typename T, bool VEC, kl::DwAcc ACC>
__global__ void __launch_bounds__(1024, 1)
    rms_norm_bwd_rows(const T* __restrict__ x, const T* __restrict__ dy, const T* __restrict__ w,
                      const float* __restrict__ rstd, T* __restrict__ dx, float* __restrict__ dw_acc, int64_t rows,
                      int cols, int group) {
  using IO = kl::RowIO<T, VEC>;
  constexpr int N = IO::N;
  extern __shared__ __align__(16) float smem[];
  float* scratch = smem;
  const int units = cols / N;
  float* acc = dw_acc;  // kAtomic: the one shared row
  if constexpr (ACC == kl::DwAcc::kShared) acc = smem + kl::kRowScratchFloats;
  if constexpr (ACC == kl::DwAcc::kGlobal) acc = dw_acc + static_cast<int64_t>(blockIdx.x) * cols;
  if constexpr (ACC != kl::DwAcc::kAtomic) {
    const float zero[N] = {};
    for (int u = threadIdx.x; u < units; u += blockDim.x) IO::cache_store(acc, u, zero);
  }
  int64_t row = blockIdx.x, end = rows, stride = gridDim.x;
  if (group > 0) {
    row = static_cast<int64_t>(blockIdx.x) * group;
    end = row + group < rows ? row + group : rows;
    stride = 1;
  }
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (; row < end; row += stride) {  // the same trip count in every thread: block_sum is safe
    const T* xr = x + row * cols;
    const T* gr = dy + row * cols;
    T* dxr = dx + row * cols;
    const float r = rstd[row];
    float dot = 0.0f;
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
      float xf[N], gf[N], wf[N];
      IO::load(xr, u, xf);
      IO::load(gr, u, gf);
      IO::load(w, u, wf);
#pragma unroll
      for (int j = 0; j < N; ++j) dot += wf[j] * gf[j] * xf[j];
    }
    const float c = kl::block_sum(dot, scratch) * r * inv_cols;
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
      float xf[N], gf[N], wf[N], d[N];
      IO::load(xr, u, xf);
      IO::load(gr, u, gf);
      IO::load(w, u, wf);
      if constexpr (ACC == kl::DwAcc::kAtomic) {
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const float xhat = xf[j] * r;
          d[j] = r * (wf[j] * gf[j] - xhat * c);
          atomicAdd(acc + static_cast<int64_t>(u) * N + j, gf[j] * xhat);
        }
      } else {
        float a[N];
        IO::cache_load(acc, u, a);
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const float xhat = xf[j] * r;
          d[j] = r * (wf[j] * gf[j] - xhat * c);
          a[j] += gf[j] * xhat;
        }
        IO::cache_store(acc, u, a);
      }
      IO::store(dxr, u, d);
    }
  }
  if constexpr (ACC == kl::DwAcc::kShared) {  // the block's partial row, from its own columns
    float* part = dw_acc + static_cast<int64_t>(blockIdx.x) * cols;
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
      float a[N];
      IO::cache_load(acc, u, a);
      IO::cache_store(part, u, a);
    }
  }
}

// dw[c] = sum over p < parts of partials[p * cols + c], in fp32, rounded once to T. A block of
// 32 x 8 threads owns 32 columns (coalesced rows of partials); its 8 rows of threads split the
// partial rows, then meet in shared memory.
template <typename T>
__global__ void __launch_bounds__(256)
    rms_norm_bwd_dw_sum(const float* __restrict__ partials, T* __restrict__ dw, int64_t parts, int cols) {
  __shared__ float sums[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  if (c < cols) {
    for (int64_t p = threadIdx.y; p < parts; p += 8) s += partials[p * cols + c];
  }
  sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
#pragma unroll
    for (int k = 1; k < 8; ++k) s += sums[k][threadIdx.x];
    dw[c] = kl::from_float<T>(s);
  }
}

namespace kl {

inline int launch_dw_sum_of(const float* partials, float* dw, int64_t parts, int64_t cols, cudaStream_t stream) {
  rms_norm_bwd_dw_sum<float><<<static_cast<unsigned>(cdiv(cols, 32)), dim3(32, 8), 0, stream>>>(
      partials, dw, parts, static_cast<int>(cols));
  return launch_status();
}

inline int launch_dw_sum_of(const float* partials, bf16* dw, int64_t parts, int64_t cols, cudaStream_t stream) {
  rms_norm_bwd_dw_sum<bf16><<<static_cast<unsigned>(cdiv(cols, 32)), dim3(32, 8), 0, stream>>>(
      partials, dw, parts, static_cast<int>(cols));
  return launch_status();
}

// The row kernel on `blocks` blocks of `threads` (group: as the kernel takes it), dw accumulated
// by ACC into `acc` (kAtomic: one zeroed row; else one partial row per block).
template <typename T, bool VEC, DwAcc ACC>
int launch_bwd_rows(const T* x, const T* dy, const T* w, const float* rstd, T* dx, float* acc, int64_t rows,
                    int64_t cols, int64_t blocks, int threads, int group, cudaStream_t stream) {
  auto kernel = rms_norm_bwd_rows<T, VEC, ACC>;
  const size_t smem = row_smem_bytes(cols, ACC == DwAcc::kShared);
  const int status = allow_smem(kernel, smem);
  if (status != kOk) return status;
  kernel<<<static_cast<unsigned>(blocks), threads, smem, stream>>>(x, dy, w, rstd, dx, acc, rows,
                                                                   static_cast<int>(cols), group);
  return launch_status();
}

// The block_atomic step: one block per row, scalar accesses, dw by atomicAdd into one fp32 row:
// dw itself in fp32 (zeroed first), else an fp32 scratch row rounded into dw by a second kernel.
template <typename T>
int launch_bwd_atomic(const T* x, const T* dy, const T* w, const float* rstd, T* dx, T* dw,
                      const RmsNormBwdScratch& scratch, int64_t rows, int64_t cols, cudaStream_t stream) {
  float* acc = nullptr;
  if constexpr (std::is_same<T, float>::value) {
    acc = dw;
  } else {
    acc = scratch.fp32 != nullptr ? scratch.fp32(scratch.owner, cols) : nullptr;
    if (acc == nullptr) return kErrNoScratch;
  }
  const cudaError_t zero = cudaMemsetAsync(acc, 0, sizeof(float) * static_cast<size_t>(cols), stream);
  if (zero != cudaSuccess) return static_cast<int>(zero);
  const int status = launch_bwd_rows<T, false, DwAcc::kAtomic>(x, dy, w, rstd, dx, acc, rows, cols, rows,
                                                                row_block_threads(cols), 1, stream);
  if (status != kOk || std::is_same<T, float>::value) return status;
  return launch_dw_sum_of(acc, dw, 1, cols, stream);
}

// The partial-row steps: `blocks` blocks, each with its own fp32 partial row of dw (in shared
// memory while it fits, else in global memory), then the partial rows summed into dw.
template <typename T, bool VEC>
int launch_bwd_partials(const T* x, const T* dy, const T* w, const float* rstd, T* dx, T* dw,
                        const RmsNormBwdScratch& scratch, int64_t rows, int64_t cols, int64_t blocks, int threads,
                        int group, cudaStream_t stream) {
  float* parts = scratch.fp32 != nullptr ? scratch.fp32(scratch.owner, blocks * cols) : nullptr;
  if (parts == nullptr) return kErrNoScratch;
  const int status =
      row_fits_smem(cols)
          ? launch_bwd_rows<T, VEC, DwAcc::kShared>(x, dy, w, rstd, dx, parts, rows, cols, blocks, threads, group,
                                                     stream)
          : launch_bwd_rows<T, VEC, DwAcc::kGlobal>(x, dy, w, rstd, dx, parts, rows, cols, blocks, threads, group,
                                                     stream);
  if (status != kOk) return status;
  return launch_dw_sum_of(parts, dw, blocks, cols, stream);
}

}  // namespace kl

// A backward step's launcher from its typed call: the dtype switch and the casts, x, dy, w, dx,
// dw typed T*.
#define KL_RMS_NORM_BWD_STEP(name, call)                                                                          \
  int name(const void* xv, const void* dyv, const void* wv, const float* rstd, void* dxv, void* dwv,              \
           const RmsNormBwdScratch& scratch, int64_t rows, int64_t cols, DType dtype, cudaStream_t stream) {      \
    return by_dtype(dtype, [&](auto t) {                                                                          \
      using T = typename decltype(t)::type;                                                                       \
      const T* x = static_cast<const T*>(xv);                                                                     \
      const T* dy = static_cast<const T*>(dyv);                                                                   \
      const T* w = static_cast<const T*>(wv);                                                                     \
      T* dx = static_cast<T*>(dxv);                                                                               \
      T* dw = static_cast<T*>(dwv);                                                                               \
      return call;                                                                                                \
    });                                                                                                           \
  }

// Row sums of a (rows, cols) matrix, accumulated in fp32 (bf16 inputs convert on load).
//
// row_sum_warp: one warp per row (8 rows per block of 256), 16-byte loads when cols % 4 == 0
// (fp32) or cols % 8 == 0 (bf16), out[row] fp32, no atomics.
//
// row_sum_cluster (sm_90): one row per thread-block cluster of small CTAs (row_cluster.cuh),
// every thread's V 16-byte loads issued at once, one cluster reduction: many more bytes in
// flight per SM than one warp per row with two loads.
#include "common.cuh"
#include "row_cluster.cuh"
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

template <typename T, int V>
__global__ void __launch_bounds__(kl::kClusterThreads)
    row_sum_cluster(const T* __restrict__ x, float* __restrict__ out, int cols, int slice_units) {
#if KL_SM90_BODY
  __shared__ float scratch[32];
  __shared__ float slots[1];
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int64_t row = blockIdx.x / cluster.num_blocks();
  kl::ClusterSlice<T, V> slice;
  slice.locate(slice_units, cols / kl::Pack<T>::N);
  slice.load(x + row * cols);
  const float s = kl::cluster_reduce<false>(slice.sum([](float v) { return v; }), scratch, &slots[0]);
  kl::cluster_reads_done();
  if (cluster.block_rank() == 0 && threadIdx.x == 0) out[row] = s;
  kl::cluster_wait_exit();
#endif
}

namespace kl {
namespace {

template <typename T>
int launch_row_sum_cluster(const T* x, float* out, int64_t rows, int64_t cols, const ClusterShape& s,
                           cudaStream_t stream) {
  const int c = static_cast<int>(cols);
  switch (s.vecs) {
    case 4:
      return launch_cluster_rows(row_sum_cluster<T, 4>, rows, s, stream, x, out, c, s.slice_units);
    case 2:
      return launch_cluster_rows(row_sum_cluster<T, 2>, rows, s, stream, x, out, c, s.slice_units);
    default:
      return launch_cluster_rows(row_sum_cluster<T, 1>, rows, s, stream, x, out, c, s.slice_units);
  }
}

template <typename T>
int run_row_sum(const T* x, float* out, int64_t rows, int64_t cols, int variant, cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x);
  ClusterShape shape;
  const int64_t units = cols / Pack<T>::N;
  if (variant == kRowSumCluster && vec && cluster_rows_supported() && cluster_shape(units, cluster_vecs(units), shape)) {
    return launch_row_sum_cluster(x, out, rows, cols, shape, stream);
  }
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

}  // namespace

int row_sum_launch(const void* x, float* out, int64_t rows, int64_t cols, DType dtype, int variant,
                   cudaStream_t stream) {
  if (variant != kRowSumWarp && variant != kRowSumCluster) return kErrUnknownVariant;
  if (rows < 0 || cols < 0 || cols > INT_MAX) return kErrBadSize;
  if (rows == 0) return kOk;
  switch (dtype) {
    case DType::kFloat32:
      return run_row_sum(static_cast<const float*>(x), out, rows, cols, variant, stream);
    case DType::kBFloat16:
      return run_row_sum(static_cast<const bf16*>(x), out, rows, cols, variant, stream);
  }
  return kErrUnsupportedDtype;
}

}  // namespace kl

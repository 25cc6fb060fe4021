// Row kernels on Hopper: one row split across a thread-block cluster.
//
// Each CTA of a cluster of C (1 to 8) holds a contiguous slice of its row in registers, V
// 16-byte vectors per thread, all loads issued before the first use; a reduction is a block
// reduction, then one value per CTA published in shared memory and read by every CTA of the
// cluster through distributed shared memory (DSMEM), summed in rank order so that all CTAs
// agree to the bit. Small CTAs (at most 256 threads) keep several rows in flight per SM
// where one CTA per row would hold a whole SM (QuACK's layout for long rows).
//
// Compiled for every architecture; the cluster path exists only from sm_90 (KL_SM90_BODY). Host code asks
// `cluster_rows_supported` and falls back to the family's one-block-per-row kernel elsewhere,
// for rows whose length is not a multiple of the 16-byte vector, and for rows too long for
// 8 CTAs.
#pragma once

#include <cooperative_groups.h>

#include <type_traits>

#include "common.cuh"

namespace kl {

constexpr int kClusterThreads = 256;  // most threads of one CTA
constexpr int kMaxCluster = 8;        // the portable cluster size

// The slice of a row one CTA holds: units are 16-byte vectors.
struct ClusterShape {
  int cluster = 1;      // CTAs per row
  int threads = 32;     // threads per CTA
  int slice_units = 0;  // vectors per CTA (the last CTA's slice may be shorter)
  int vecs = 1;         // vectors per thread: the kernel's V
};

// The smallest cluster whose CTAs cover a row of `units` vectors with at most 256 threads
// of `vecs` vectors each; false when even 8 CTAs cannot.
inline bool cluster_shape(int64_t units, int vecs, ClusterShape& s) {
  for (int c = 1; c <= kMaxCluster; c *= 2) {
    const int64_t per = cdiv(units, c);
    if (per <= static_cast<int64_t>(kClusterThreads) * vecs) {
      s.cluster = c;
      s.slice_units = static_cast<int>(per);
      s.threads = static_cast<int>((cdiv(per, vecs) + 31) / 32 * 32);
      s.vecs = vecs;
      return true;
    }
  }
  return false;
}

// Four vectors per thread (32 bf16 or 16 fp32 values, 64 bytes in flight) once a row has
// enough of them, fewer for short rows so that threads are not left idle.
inline int cluster_vecs(int64_t units) { return units >= 512 ? 4 : units >= 64 ? 2 : 1; }

// Thread-block clusters exist from sm_90.
inline bool cluster_rows_supported() { return sm90_or_newer(); }

// Launch `kernel` with one cluster of s.cluster CTAs per row.
template <typename Kernel, typename... Args>
int launch_cluster_rows(Kernel kernel, int64_t rows, const ClusterShape& s, cudaStream_t stream, Args... args) {
  if (rows * s.cluster > INT_MAX) return kErrBadSize;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(rows * s.cluster));
  cfg.blockDim = dim3(static_cast<unsigned>(s.threads));
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(s.cluster);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, args...);
  return err == cudaSuccess ? launch_status() : static_cast<int>(err);
}

// The cluster shape of a row of `cols` elements of T where the cluster kernels take it (`aligned`:
// every pointer 16-byte aligned; the row a whole number of vectors; sm_90; at most 8 CTAs), else
// false: the family's fallback kernel takes the row.
template <typename T>
inline bool cluster_rows_shape(int64_t cols, bool aligned, ClusterShape& s) {
  const int64_t units = cols / Pack<T>::N;
  return aligned && cols % Pack<T>::N == 0 && cluster_rows_supported() &&
         cluster_shape(units, cluster_vecs(units), s);
}

// A cluster step's host side: `launch(shape)` where the row fits a cluster (cluster_rows_shape), else
// `fallback()`, the family's kernel for every row.
template <typename T, typename Launch, typename Fallback>
int cluster_rows_or(int64_t cols, bool aligned, Launch launch, Fallback fallback) {
  ClusterShape shape;
  if (cluster_rows_shape<T>(cols, aligned, shape)) return launch(shape);
  return fallback();
}

// Launch the cluster kernel of V = s.vecs (4, 2 or 1) vectors per thread, one cluster per row:
// `kernel_of(std::integral_constant<int, V>{})` names the family's instantiation, e.g.
//   launch_cluster_rows_v([](auto v) { return row_sum_cluster<T, decltype(v)::value>; }, rows, s, stream, ...)
template <typename KernelOf, typename... Args>
int launch_cluster_rows_v(KernelOf kernel_of, int64_t rows, const ClusterShape& s, cudaStream_t stream,
                          Args... args) {
  switch (s.vecs) {
    case 4:
      return launch_cluster_rows(kernel_of(std::integral_constant<int, 4>{}), rows, s, stream, args...);
    case 2:
      return launch_cluster_rows(kernel_of(std::integral_constant<int, 2>{}), rows, s, stream, args...);
    default:
      return launch_cluster_rows(kernel_of(std::integral_constant<int, 1>{}), rows, s, stream, args...);
  }
}

// This CTA's slice of its row, V vectors per thread, held as fp32.
template <typename T, int V>
struct ClusterSlice {
  static constexpr int N = Pack<T>::N;
  float v[V][N];
  int unit[V];  // vector index within the row
  bool ok[V];   // inside the row (the last slice may be short, threads past it idle)

  __device__ __forceinline__ void locate(int slice_units, int units) {
    const int begin = static_cast<int>(cooperative_groups::this_cluster().block_rank()) * slice_units;
    const int end = min(begin + slice_units, units);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      unit[k] = begin + static_cast<int>(threadIdx.x) + k * static_cast<int>(blockDim.x);
      ok[k] = unit[k] < end;
    }
  }

  // All V loads are issued before any value is used.
  __device__ __forceinline__ void load(const T* __restrict__ row) {
    uint4 raw[V];
#pragma unroll
    for (int k = 0; k < V; ++k) raw[k] = ok[k] ? load16(row, unit[k]) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < V; ++k) Pack<T>::unpack(raw[k], v[k]);
  }

  // The raw vectors of a per-column parameter (weight, bias) for this thread's units.
  __device__ __forceinline__ void load_raw(const T* __restrict__ p, uint4 (&raw)[V]) const {
#pragma unroll
    for (int k = 0; k < V; ++k) raw[k] = ok[k] ? load16(p, unit[k]) : make_uint4(0, 0, 0, 0);
  }

  __device__ __forceinline__ void store(T* __restrict__ row) const {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (ok[k]) store16(row, unit[k], Pack<T>::pack(v[k]));
    }
  }

  // Sum over this thread's values of f(value); out-of-row lanes hold zeros and are skipped.
  template <typename F>
  __device__ __forceinline__ float sum(F f) const {
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (ok[k]) {
#pragma unroll
        for (int j = 0; j < N; ++j) s += f(v[k][j]);
      }
    }
    return s;
  }
};

// Cluster-wide sum or max of one value per thread; every thread of every CTA gets the same
// result. `slot` is a __shared__ float used by this reduction only (no reuse hazard across
// reductions); `scratch` the 32-float block-reduction scratch.
template <bool MAX>
__device__ __forceinline__ float cluster_reduce(float v, float* scratch, float* slot) {
  namespace cg = cooperative_groups;
  v = MAX ? block_max(v, scratch) : block_sum(v, scratch);
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned n = cluster.num_blocks();
  if (n == 1) return v;
  if (threadIdx.x == 0) *slot = v;
  cluster.sync();  // every CTA's partial is published
  float r = MAX ? -INFINITY : 0.0f;
  for (unsigned k = 0; k < n; ++k) {
    const float p = *cluster.map_shared_rank(slot, k);
    r = MAX ? fmaxf(r, p) : r + p;
  }
  return r;
}

// A CTA's shared memory must outlive the other CTAs' reads of its slots: arrive once done
// reading, wait just before exiting (the stores in between overlap the barrier).
__device__ __forceinline__ void cluster_reads_done() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait_exit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

}  // namespace kl

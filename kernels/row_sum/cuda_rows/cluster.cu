// row_sum step "cluster" (sm_90): one row per thread-block cluster of small CTAs (row_cluster.cuh),
// every thread's V 16-byte loads issued at once, one cluster reduction: many more bytes in flight
// per SM than one warp per row with two loads. Rows it cannot take (not 16-byte vectors, no
// clusters, no cluster shape) run the warp step's kernel.
#include "row_cluster.cuh"
#include "row_sum.cuh"

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
int run(const T* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  return cluster_rows_or<T>(
      cols, aligned16(x),
      [&](const ClusterShape& s) {
        return launch_cluster_rows_v([](auto v) { return row_sum_cluster<T, decltype(v)::value>; }, rows, s,
                                     stream, x, out, static_cast<int>(cols), s.slice_units);
      },
      [&] { return launch_row_sum_warp(x, out, rows, cols, stream); });
}

KL_ROW_SUM_STEP(cluster, run(x, out, rows, cols, stream))

}  // namespace

KL_STEP(row_sum, cluster);

}  // namespace kl

// softmax step "cluster" (sm_90): the row split across a thread-block cluster, each CTA's slice in
// registers (row_cluster.cuh): cluster max, exp2 once per element kept in registers, cluster
// sum, scaled write. One read and one write per element, several rows in flight per SM.
// Other rows (not a multiple of the vector, too long for 8 CTAs, before sm_90) take
// softmax_block.
#include "row_cluster.cuh"
#include "softmax.cuh"

template <typename T, int V>
__global__ void __launch_bounds__(kl::kClusterThreads)
    softmax_cluster(const T* __restrict__ x, T* __restrict__ out, int cols, int slice_units) {
#if KL_SM90_BODY
  constexpr float kLog2e = 1.4426950408889634f;
  __shared__ float scratch[32];
  __shared__ float slots[2];
  const int64_t row = blockIdx.x / cooperative_groups::this_cluster().num_blocks();
  kl::ClusterSlice<T, V> slice;
  slice.locate(slice_units, cols / kl::Pack<T>::N);
  slice.load(x + row * cols);
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    if (slice.ok[k]) {
#pragma unroll
      for (int j = 0; j < kl::Pack<T>::N; ++j) m = fmaxf(m, slice.v[k][j]);
    }
  }
  m = kl::cluster_reduce<true>(m, scratch, &slots[0]);
  const float shift = m * kLog2e;
#pragma unroll
  for (int k = 0; k < V; ++k) {
#pragma unroll
    for (int j = 0; j < kl::Pack<T>::N; ++j) slice.v[k][j] = kl::fast_exp2(fmaf(slice.v[k][j], kLog2e, -shift));
  }
  const float s = kl::cluster_reduce<false>(slice.sum([](float e) { return e; }), scratch, &slots[1]);
  kl::cluster_reads_done();
  const float inv = 1.0f / s;
#pragma unroll
  for (int k = 0; k < V; ++k) {
#pragma unroll
    for (int j = 0; j < kl::Pack<T>::N; ++j) slice.v[k][j] *= inv;
  }
  slice.store(out + row * cols);
  kl::cluster_wait_exit();
#endif
}

namespace kl {
namespace {

template <typename T>
int run(const T* x, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  return cluster_rows_or<T>(
      cols, aligned16(x) && aligned16(out),
      [&](const ClusterShape& s) {
        return launch_cluster_rows_v([](auto v) { return softmax_cluster<T, decltype(v)::value>; }, rows, s,
                                     stream, x, out, static_cast<int>(cols), s.slice_units);
      },
      [&] { return launch_softmax_block(x, out, rows, cols, stream); });
}

KL_SOFTMAX_STEP(cluster, run(x, out, rows, cols, stream))

}  // namespace

KL_STEP(softmax, cluster);

}  // namespace kl

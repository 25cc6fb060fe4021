// layer_norm step "cluster": the row split across a thread-block cluster, each CTA's slice in registers
// (row_cluster.cuh); mean, then the centered variance, each one cluster reduction; weight and bias
// loads issued before the first reduction. One read of x. Other rows take the block kernel.
#include "row_cluster.cuh"
#include "layer_norm.cuh"

template <typename T, int V>
__global__ void __launch_bounds__(kl::kClusterThreads)
    layer_norm_cluster(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                       T* __restrict__ out, int cols, int slice_units, float eps) {
#if KL_SM90_BODY
  constexpr int N = kl::Pack<T>::N;
  __shared__ float scratch[32];
  __shared__ float slots[2];
  const int64_t row = blockIdx.x / cooperative_groups::this_cluster().num_blocks();
  kl::ClusterSlice<T, V> slice;
  slice.locate(slice_units, cols / N);
  slice.load(x + row * cols);
  uint4 wraw[V], braw[V];
  slice.load_raw(w, wraw);
  slice.load_raw(b, braw);
  const float inv_cols = 1.0f / static_cast<float>(cols);
  const float mean = kl::cluster_reduce<false>(slice.sum([](float v) { return v; }), scratch, &slots[0]) * inv_cols;
  const float var = kl::cluster_reduce<false>(
      slice.sum([mean](float v) { return (v - mean) * (v - mean); }), scratch, &slots[1]) * inv_cols;
  kl::cluster_reads_done();
  const float rstd = rsqrtf(var + eps);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float wf[N], bf[N];
    kl::Pack<T>::unpack(wraw[k], wf);
    kl::Pack<T>::unpack(braw[k], bf);
#pragma unroll
    for (int j = 0; j < N; ++j) slice.v[k][j] = (slice.v[k][j] - mean) * rstd * wf[j] + bf[j];
  }
  slice.store(out + row * cols);
  kl::cluster_wait_exit();
#endif
}

namespace kl {
namespace {

template <typename T>
int run_cluster(const T* x, const T* w, const T* b, T* out, int64_t rows, int64_t cols, float eps,
                cudaStream_t stream) {
  return cluster_rows_or<T>(
      cols, aligned16(x) && aligned16(w) && aligned16(b) && aligned16(out),
      [&](const ClusterShape& s) {
        return launch_cluster_rows_v([](auto v) { return layer_norm_cluster<T, decltype(v)::value>; }, rows, s,
                                     stream, x, w, b, out, static_cast<int>(cols), s.slice_units, eps);
      },
      [&] { return launch_layer_norm_block(x, w, b, out, rows, cols, eps, stream); });
}

KL_LAYER_NORM_STEP(cluster, run_cluster(x, w, b, out, rows, cols, eps, stream))

}  // namespace

KL_STEP(layer_norm, cluster);

}  // namespace kl

// rms_norm step "cluster": the row split across a thread-block cluster, each CTA's slice in registers
// (row_cluster.cuh); one cluster reduction of the squares, the weight loads issued before it. One
// read of x. Other rows take the block kernel.
#include "row_cluster.cuh"
#include "rms_norm.cuh"

template <typename T, int V>
__global__ void __launch_bounds__(kl::kClusterThreads)
    rms_norm_cluster(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ out, int cols, int slice_units,
                     float eps) {
#if KL_SM90_BODY
  constexpr int N = kl::Pack<T>::N;
  __shared__ float scratch[32];
  __shared__ float slots[1];
  const int64_t row = blockIdx.x / cooperative_groups::this_cluster().num_blocks();
  kl::ClusterSlice<T, V> slice;
  slice.locate(slice_units, cols / N);
  slice.load(x + row * cols);
  uint4 wraw[V];
  slice.load_raw(w, wraw);
  const float ss = kl::cluster_reduce<false>(slice.sum([](float v) { return v * v; }), scratch, &slots[0]);
  kl::cluster_reads_done();
  const float rstd = rsqrtf(ss / static_cast<float>(cols) + eps);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float wf[N];
    kl::Pack<T>::unpack(wraw[k], wf);
#pragma unroll
    for (int j = 0; j < N; ++j) slice.v[k][j] = slice.v[k][j] * rstd * wf[j];
  }
  slice.store(out + row * cols);
  kl::cluster_wait_exit();
#endif
}

namespace kl {
namespace {

template <typename T>
int run_cluster(const T* x, const T* w, T* out, int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  return cluster_rows_or<T>(
      cols, aligned16(x) && aligned16(w) && aligned16(out),
      [&](const ClusterShape& s) {
        return launch_cluster_rows_v([](auto v) { return rms_norm_cluster<T, decltype(v)::value>; }, rows, s,
                                     stream, x, w, out, static_cast<int>(cols), s.slice_units, eps);
      },
      [&] { return launch_rms_norm_block(x, w, out, rows, cols, eps, stream); });
}

KL_RMS_NORM_STEP(cluster, run_cluster(x, w, out, rows, cols, eps, stream))

}  // namespace

KL_STEP(rms_norm, cluster);

}  // namespace kl

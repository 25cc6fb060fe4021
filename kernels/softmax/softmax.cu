// Softmax over the last dimension of a (rows, cols) row-major matrix, one block per row.
//
// softmax_block: the row is read from global memory once into an fp32 copy in shared memory
// (dynamic, up to the device's opt-in limit, 227 KB on Hopper: about 58K columns), then
// max -> sum of exp -> scaled write all run from shared memory. Rows too long for shared
// memory take three passes over global memory (max, sum of exp, write). Block reductions
// are warp shuffles plus one shared-memory step; everything accumulates in fp32. Loads and
// stores are 16 bytes wide when cols % 4 == 0 (fp32) or cols % 8 == 0 (bf16) and the
// pointers are aligned, else scalar (cols = 1000 for bf16, 1001 for either).
//
// softmax_cluster (sm_90): the row split across a thread-block cluster, each CTA's slice in
// registers (row_cluster.cuh): cluster max, exp2 once per element kept in registers, cluster
// sum, scaled write. One read and one write per element, several rows in flight per SM.
// Other rows (not a multiple of the vector, too long for 8 CTAs, before sm_90) take
// softmax_block.
//
// softmax_staged (sm_90): one row per CTA staged in shared memory in its own dtype by bulk
// copies (row_stage.cuh); max, sum of exp2 and the scaled write read that copy (exp2 twice
// per element, no registers per element). Rows that cannot be staged take softmax_block.
#include "common.cuh"
#include "row_cluster.cuh"
#include "row_stage.cuh"
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

template <typename T>
__global__ void __launch_bounds__(kl::kStageThreads)
    softmax_staged(const T* __restrict__ x, T* __restrict__ out, int cols) {
#if KL_SM90_BODY
  using P = kl::Pack<T>;
  constexpr int N = P::N;
  constexpr float kLog2e = 1.4426950408889634f;
  extern __shared__ __align__(128) uint4 staged[];
  __shared__ float scratch[32];
  __shared__ __align__(8) uint64_t bar;
  const int64_t row = blockIdx.x;
  const int units = cols / N;
  kl::stage_row(staged, x + row * cols, static_cast<uint32_t>(cols * sizeof(T)), &bar);
  const float m = kl::staged_fold<T>(staged, units, -INFINITY, [](float a, float v) { return fmaxf(a, v); });
  const float shift = kl::block_max(m, scratch) * kLog2e;
  const float s = kl::staged_fold<T>(staged, units, 0.0f, [shift](float a, float v) {
    return a + kl::fast_exp2(fmaf(v, kLog2e, -shift));
  });
  const float inv = 1.0f / kl::block_sum(s, scratch);
  T* yr = out + row * cols;
  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    float f[N];
    P::unpack(staged[u], f);
#pragma unroll
    for (int j = 0; j < N; ++j) f[j] = kl::fast_exp2(fmaf(f[j], kLog2e, -shift)) * inv;
    kl::store16(yr, u, P::pack(f));
  }
#endif
}

namespace kl {
namespace {

template <typename T>
int launch_softmax_cluster(const T* x, T* out, int64_t rows, int64_t cols, const ClusterShape& s,
                           cudaStream_t stream) {
  const int c = static_cast<int>(cols);
  switch (s.vecs) {
    case 4:
      return launch_cluster_rows(softmax_cluster<T, 4>, rows, s, stream, x, out, c, s.slice_units);
    case 2:
      return launch_cluster_rows(softmax_cluster<T, 2>, rows, s, stream, x, out, c, s.slice_units);
    default:
      return launch_cluster_rows(softmax_cluster<T, 1>, rows, s, stream, x, out, c, s.slice_units);
  }
}

template <typename T, bool VEC, bool CACHED>
int launch_softmax(const T* x, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  auto kernel = softmax_block<T, VEC, CACHED>;
  const size_t smem = row_smem_bytes(cols, CACHED);
  const int status = allow_smem(kernel, smem);
  if (status != kOk) return status;
  const int threads = row_block_threads(VEC ? cols / Pack<T>::N : cols);
  kernel<<<static_cast<unsigned>(rows), threads, smem, stream>>>(x, out, static_cast<int>(cols));
  return launch_status();
}

template <typename T>
int run_softmax(const void* xv, void* outv, int64_t rows, int64_t cols, int variant, cudaStream_t stream) {
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(outv);
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(out);
  ClusterShape shape;
  const int64_t units = cols / Pack<T>::N;
  if (variant == kSoftmaxCluster && vec && cluster_rows_supported() && cluster_shape(units, cluster_vecs(units), shape)) {
    return launch_softmax_cluster(x, out, rows, cols, shape, stream);
  }
  if (variant == kSoftmaxStaged && staged_rows_fit(cols * sizeof(T), vec)) {
    return launch_staged_rows(softmax_staged<T>, rows, cols * sizeof(T), staged_threads(units), stream, x, out,
                              static_cast<int>(cols));
  }
  const bool cached = row_fits_smem(cols);
  if (vec) {
    return cached ? launch_softmax<T, true, true>(x, out, rows, cols, stream)
                  : launch_softmax<T, true, false>(x, out, rows, cols, stream);
  }
  return cached ? launch_softmax<T, false, true>(x, out, rows, cols, stream)
                : launch_softmax<T, false, false>(x, out, rows, cols, stream);
}

}  // namespace

int softmax_launch(const void* x, void* out, int64_t rows, int64_t cols, DType dtype, int variant,
                   cudaStream_t stream) {
  if (variant != kSoftmaxBlock && variant != kSoftmaxCluster && variant != kSoftmaxStaged) return kErrUnknownVariant;
  if (rows < 0 || cols < 0 || rows > INT_MAX || cols > INT_MAX) return kErrBadSize;
  if (rows == 0 || cols == 0) return kOk;
  switch (dtype) {
    case DType::kFloat32:
      return run_softmax<float>(x, out, rows, cols, variant, stream);
    case DType::kBFloat16:
      return run_softmax<bf16>(x, out, rows, cols, variant, stream);
  }
  return kErrUnsupportedDtype;
}

}  // namespace kl

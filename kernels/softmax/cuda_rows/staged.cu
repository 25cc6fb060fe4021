// softmax step "staged" (sm_90): one row per CTA staged in shared memory in its own dtype by bulk
// copies (row_stage.cuh); max, sum of exp2 and the scaled write read that copy (exp2 twice
// per element, no registers per element). Rows that cannot be staged take softmax_block.
#include "row_stage.cuh"
#include "softmax.cuh"

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
int run(const T* x, T* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(out);
  const int64_t units = cols / Pack<T>::N;
  if (staged_rows_fit(cols * sizeof(T), vec)) {
    return launch_staged_rows(softmax_staged<T>, rows, cols * sizeof(T), staged_threads(units), stream, x, out,
                              static_cast<int>(cols));
  }
  return launch_softmax_block(x, out, rows, cols, stream);
}

KL_SOFTMAX_STEP(staged, run(x, out, rows, cols, stream))

}  // namespace

KL_STEP(softmax, staged);

}  // namespace kl

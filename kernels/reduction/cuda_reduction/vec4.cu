// reduce_sum step "vec4": grid-stride over 16-byte vectors, four in flight per thread into four
// fp32 accumulators, a grid of one wave of resident blocks, warp shuffles, one atomicAdd per block
// (block_sum_atomic, reduction.cuh).
#include "reduction.cuh"

constexpr int kReduceVecThreads = 512;
constexpr int kReduceIlp = 4;

template <typename T>
__global__ void __launch_bounds__(kReduceVecThreads)
    reduce_sum_vec4(const T* __restrict__ x, float* out, int64_t n, int64_t nvec) {
  using kl::Pack;
  constexpr int N = Pack<T>::N;
  constexpr int ILP = kReduceIlp;
  const int64_t nthreads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc[ILP] = {};
  int64_t base = tid;
  for (; base + (ILP - 1) * nthreads < nvec; base += ILP * nthreads) {
    uint4 v[ILP];
#pragma unroll
    for (int k = 0; k < ILP; ++k) v[k] = kl::load16(x, base + k * nthreads);
#pragma unroll
    for (int k = 0; k < ILP; ++k) {
      float f[N];
      Pack<T>::unpack(v[k], f);
#pragma unroll
      for (int j = 0; j < N; ++j) acc[k] += f[j];
    }
  }
#pragma unroll
  for (int k = 0; k < ILP - 1; ++k) {
    const int64_t i = base + k * nthreads;
    if (i < nvec) {
      float f[N];
      Pack<T>::unpack(kl::load16(x, i), f);
#pragma unroll
      for (int j = 0; j < N; ++j) acc[k] += f[j];
    }
  }
  for (int64_t i = nvec * N + tid; i < n; i += nthreads) acc[ILP - 1] += kl::to_float(x[i]);
  kl::block_sum_atomic((acc[0] + acc[1]) + (acc[2] + acc[3]), out);
}

namespace kl {
namespace {

int vec4(const void* xv, float* out, const ReduceSumScratch&, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const T* x = static_cast<const T*>(xv);
    const int64_t nvec = aligned16(x) ? n / Pack<T>::N : 0;
    const int64_t work = cdiv(nvec > 0 ? nvec : n, kReduceIlp);
    // One wave: 2048 resident threads per SM = 4 blocks of 512.
    const unsigned grid = grid_for(work, kReduceVecThreads, static_cast<int64_t>(num_sms()) * 4);
    reduce_sum_vec4<T><<<grid, kReduceVecThreads, 0, stream>>>(x, out, n, nvec);
    return launch_status();
  });
}

}  // namespace

KL_STEP(reduction, vec4);

}  // namespace kl

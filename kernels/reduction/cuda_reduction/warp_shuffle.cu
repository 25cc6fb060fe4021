// reduce_sum step "warp_shuffle": one element per thread, __shfl_down_sync within each warp, then
// one warp over the warp sums, one atomicAdd per block (block_sum_atomic, reduction.cuh).
#include "reduction.cuh"

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_sum_warp_shuffle(const T* __restrict__ x, float* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  kl::block_sum_atomic(i < n ? kl::to_float(x[i]) : 0.0f, out);
}

namespace kl {
namespace {

int warp_shuffle(const void* xv, float* out, const ReduceSumScratch&, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const T* x = static_cast<const T*>(xv);
    const int64_t blocks = cdiv(n, kReduceThreads);
    if (blocks > INT_MAX) return kErrBadSize;
    reduce_sum_warp_shuffle<T><<<static_cast<unsigned>(blocks), kReduceThreads, 0, stream>>>(x, out, n);
    return launch_status();
  });
}

}  // namespace

KL_STEP(reduction, warp_shuffle);

}  // namespace kl

// reduce_sum step "smem_tree": one element per thread, a shared-memory tree per block of 256,
// one atomicAdd per block.
#include "reduction.cuh"

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_sum_smem_tree(const T* __restrict__ x, float* out, int64_t n) {
  __shared__ float buf[kReduceThreads];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kReduceThreads + threadIdx.x;
  buf[threadIdx.x] = i < n ? kl::to_float(x[i]) : 0.0f;
  __syncthreads();
#pragma unroll
  for (int s = kReduceThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, buf[0]);
}

namespace kl {
namespace {

int smem_tree(const void* xv, float* out, const ReduceSumScratch&, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const T* x = static_cast<const T*>(xv);
    const int64_t blocks = cdiv(n, kReduceThreads);
    if (blocks > INT_MAX) return kErrBadSize;
    reduce_sum_smem_tree<T><<<static_cast<unsigned>(blocks), kReduceThreads, 0, stream>>>(x, out, n);
    return launch_status();
  });
}

}  // namespace

KL_STEP(reduction, smem_tree);

}  // namespace kl

// reduce_sum step "atomic": one atomicAdd per element, all on the same address, into an fp64
// accumulator (an fp32 one stalls once the sum passes 2^25: each increment under half an ulp),
// then one thread stores it as fp32.
#include "reduction.cuh"

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_sum_atomic(const T* __restrict__ x, double* acc, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(acc, static_cast<double>(kl::to_float(x[i])));
}

__global__ void store_sum_fp32(const double* __restrict__ acc, float* __restrict__ out) {
  *out = static_cast<float>(*acc);
}

namespace kl {
namespace {

int atomic(const void* xv, float* out, const ReduceSumScratch& scratch, int64_t n, DType dtype,
           cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const T* x = static_cast<const T*>(xv);
    const int64_t blocks = cdiv(n, kReduceThreads);
    if (blocks > INT_MAX) return kErrBadSize;
    double* acc = scratch.fp64 != nullptr ? scratch.fp64(scratch.owner) : nullptr;
    if (acc == nullptr) return kErrNoScratch;
    const cudaError_t zero = cudaMemsetAsync(acc, 0, sizeof(double), stream);
    if (zero != cudaSuccess) return static_cast<int>(zero);
    reduce_sum_atomic<T><<<static_cast<unsigned>(blocks), kReduceThreads, 0, stream>>>(x, acc, n);
    const int status = launch_status();
    if (status != kOk) return status;
    store_sum_fp32<<<1, 1, 0, stream>>>(acc, out);
    return launch_status();
  });
}

}  // namespace

KL_STEP(reduction, atomic);

}  // namespace kl

// SiLU step "scalar": one element per thread, 4-byte (fp32) or 2-byte (bf16) loads and stores.
#include "silu.cuh"

template <typename T>
__global__ void __launch_bounds__(kSiluThreads) silu_scalar(const T* __restrict__ x, T* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kl::from_float<T>(silu(kl::to_float(x[i])));
}

namespace kl {
namespace {

int scalar(const void* x, void* out, int64_t n, DType dtype, cudaStream_t stream) {
  const int64_t blocks = cdiv(n, kSiluThreads);
  if (blocks > INT_MAX) return kErrBadSize;
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    silu_scalar<T><<<static_cast<unsigned>(blocks), kSiluThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                               static_cast<T*>(out), n);
    return launch_status();
  });
}

}  // namespace

KL_STEP(silu, scalar);

}  // namespace kl

// SiLU step "vec4": 16-byte loads and stores (4 fp32 or 8 bf16) in a grid-stride loop, scalar tail.
#include "silu.cuh"

template <typename T>
__global__ void __launch_bounds__(kSiluThreads)
    silu_vec4(const T* __restrict__ x, T* __restrict__ out, int64_t n, int64_t nvec) {
  using kl::Pack;
  constexpr int N = Pack<T>::N;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nvec; i += stride) {
    float f[N];
    Pack<T>::unpack(kl::load16(x, i), f);
#pragma unroll
    for (int j = 0; j < N; ++j) f[j] = silu(f[j]);
    kl::store16(out, i, Pack<T>::pack(f));
  }
  for (int64_t i = nvec * N + tid; i < n; i += stride) out[i] = kl::from_float<T>(silu(kl::to_float(x[i])));
}

namespace kl {
namespace {

int vec4(const void* x, void* out, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const bool vec = aligned16(x) && aligned16(out);
    const int64_t nvec = vec ? n / Pack<T>::N : 0;
    const unsigned grid = grid_for(vec ? nvec : n, kSiluThreads, static_cast<int64_t>(num_sms()) * 32);
    silu_vec4<T><<<grid, kSiluThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), n, nvec);
    return launch_status();
  });
}

}  // namespace

KL_STEP(silu, vec4);

}  // namespace kl

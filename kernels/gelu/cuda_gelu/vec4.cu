// GeLU step "vec4": fp32 arithmetic (float literals, tanhf) and 16-byte loads and stores (4 fp32 or
// 8 bf16 per vector) in a grid-stride loop; scalar tail.
#include "gelu.cuh"

namespace kl {

__device__ __forceinline__ float gelu_f32(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));
}

}  // namespace kl

template <typename T>
__global__ void __launch_bounds__(kGeluThreads)
    gelu_vec4(const T* __restrict__ x, T* __restrict__ out, int64_t n, int64_t nvec) {
  using kl::Pack;
  constexpr int N = Pack<T>::N;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nvec; i += stride) {
    float f[N];
    Pack<T>::unpack(kl::load16(x, i), f);
#pragma unroll
    for (int j = 0; j < N; ++j) f[j] = kl::gelu_f32(f[j]);
    kl::store16(out, i, Pack<T>::pack(f));
  }
  for (int64_t i = nvec * N + tid; i < n; i += stride) {
    out[i] = kl::from_float<T>(kl::gelu_f32(kl::to_float(x[i])));
  }
}

namespace kl {
namespace {

int vec4(const void* xv, void* outv, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const T* x = static_cast<const T*>(xv);
    T* out = static_cast<T*>(outv);
    const bool vec = aligned16(x) && aligned16(out);
    const int64_t nvec = vec ? n / Pack<T>::N : 0;
    const int64_t work = vec ? nvec : n;
    const unsigned grid = grid_for(work, kGeluThreads, static_cast<int64_t>(num_sms()) * 32);
    gelu_vec4<T><<<grid, kGeluThreads, 0, stream>>>(x, out, n, nvec);
    return launch_status();
  });
}

}  // namespace

KL_STEP(gelu, vec4);

}  // namespace kl

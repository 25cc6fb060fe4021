// SiLU, out = x * sigmoid(x), computed in fp32.
//
// silu_scalar: one element per thread.
// silu_vec4:   16-byte loads and stores (4 fp32 or 8 bf16) in a grid-stride loop, scalar tail.
#include "common.cuh"
#include "silu.h"

constexpr int kSiluThreads = 256;

__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }

template <typename T>
__global__ void __launch_bounds__(kSiluThreads) silu_scalar(const T* __restrict__ x, T* __restrict__ out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kl::from_float<T>(silu(kl::to_float(x[i])));
}

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

template <typename T>
int run_silu(const void* x, void* out, int64_t n, int variant, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  T* o = static_cast<T*>(out);
  if (variant == kSiluScalar) {
    const int64_t blocks = cdiv(n, kSiluThreads);
    if (blocks > INT_MAX) return kErrBadSize;
    silu_scalar<T><<<static_cast<unsigned>(blocks), kSiluThreads, 0, stream>>>(in, o, n);
    return launch_status();
  }
  const bool vec = aligned16(x) && aligned16(out);
  const int64_t nvec = vec ? n / Pack<T>::N : 0;
  const unsigned grid = grid_for(vec ? nvec : n, kSiluThreads, static_cast<int64_t>(num_sms()) * 32);
  silu_vec4<T><<<grid, kSiluThreads, 0, stream>>>(in, o, n, nvec);
  return launch_status();
}

}  // namespace

int silu_launch(const void* x, void* out, int64_t n, DType dtype, int variant, cudaStream_t stream) {
  if (variant < 0 || variant >= count_of(kSiluVariants)) return kErrUnknownVariant;
  if (n < 0) return kErrBadSize;
  if (n == 0) return kOk;
  switch (dtype) {
    case DType::kFloat32:
      return run_silu<float>(x, out, n, variant, stream);
    case DType::kBFloat16:
      return run_silu<bf16>(x, out, n, variant, stream);
  }
  return kErrUnsupportedDtype;
}

}  // namespace kl

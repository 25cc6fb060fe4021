// GeLU step "vec4_ilp": four 16-byte vectors in flight per thread (all loaded before any is used),
// a grid of one full wave of resident blocks, and MUFU arithmetic:
// bf16: tanh.approx.f32 (relative error 2^-11, below bf16's rounding of 2^-9);
// fp32: 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)) with ex2.approx (2^-22) and a fast divide, about
// 1e-6 relative. tanh.approx.f32 would miss the 1e-5 fp32 tolerance by an order of magnitude.
#include "gelu.cuh"

constexpr int kGeluIlp = 4;

namespace kl {

__device__ __forceinline__ float tanh_approx(float u) {
  float t;
  asm("tanh.approx.f32 %0, %1;" : "=f"(t) : "f"(u));
  return t;
}

__device__ __forceinline__ float exp2_approx(float v) {
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(v));
  return e;
}

template <typename T>
__device__ __forceinline__ float gelu_fast(float x);

// x * sigmoid(2u): no cancellation where tanh(u) is near -1; exp overflow gives x / inf = 0.
template <>
__device__ __forceinline__ float gelu_fast<float>(float x) {
  const float u = 0.79788456f * (x + 0.044715f * x * x * x);
  const float e = exp2_approx(-2.8853900817779268f * u);  // exp(-2u) = 2^(-2u * log2(e))
  return __fdividef(x, 1.0f + e);
}

template <>
__device__ __forceinline__ float gelu_fast<bf16>(float x) {
  const float u = 0.79788456f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanh_approx(u));
}

}  // namespace kl

template <typename T>
__global__ void __launch_bounds__(kGeluThreads)
    gelu_vec4_ilp(const T* __restrict__ x, T* __restrict__ out, int64_t n, int64_t nvec) {
  using kl::Pack;
  constexpr int N = Pack<T>::N;
  constexpr int ILP = kGeluIlp;
  const int64_t nthreads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Thread tid handles vectors base + k * nthreads (k < ILP): each k is coalesced across the warp.
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
      for (int j = 0; j < N; ++j) f[j] = kl::gelu_fast<T>(f[j]);
      kl::store16(out, base + k * nthreads, Pack<T>::pack(f));
    }
  }
  // Fewer than ILP vectors left for this thread.
#pragma unroll
  for (int k = 0; k < ILP - 1; ++k) {
    const int64_t i = base + k * nthreads;
    if (i < nvec) {
      float f[N];
      Pack<T>::unpack(kl::load16(x, i), f);
#pragma unroll
      for (int j = 0; j < N; ++j) f[j] = kl::gelu_fast<T>(f[j]);
      kl::store16(out, i, Pack<T>::pack(f));
    }
  }
  for (int64_t i = nvec * N + tid; i < n; i += nthreads) {
    out[i] = kl::from_float<T>(kl::gelu_fast<T>(kl::to_float(x[i])));
  }
}

namespace kl {
namespace {

int vec4_ilp(const void* xv, void* outv, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const T* x = static_cast<const T*>(xv);
    T* out = static_cast<T*>(outv);
    const bool vec = aligned16(x) && aligned16(out);
    const int64_t nvec = vec ? n / Pack<T>::N : 0;
    const int64_t work = vec ? nvec : n;
    // One wave: 2048 resident threads per SM = 8 blocks of 256.
    const unsigned grid = grid_for(cdiv(work, kGeluIlp), kGeluThreads, static_cast<int64_t>(num_sms()) * 8);
    gelu_vec4_ilp<T><<<grid, kGeluThreads, 0, stream>>>(x, out, n, nvec);
    return launch_status();
  });
}

}  // namespace

KL_STEP(gelu, vec4_ilp);

}  // namespace kl

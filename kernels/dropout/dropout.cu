// Dropout: out = keep ? x / (1 - p) : 0, keep = uniform >= p.
//
// The family's one CUDA step, "philox" (kernel dropout_philox, registered in the step table of
// dropout.h): counter-based randomness. Element i uses word i % 4 of
// Philox4x32-10(counter = (i / 4 as 64 bits, 0, 0), key = seed as two 32-bit halves), and
// uniform = (word >> 8) * 2^-24. The result for an element depends only on the seed and
// its index (not on the grid, the tensor's size or the run), no mask is stored, and one
// Philox call serves four elements: one 16-byte load and store for fp32, 8 bytes for bf16.
#include "common.cuh"
#include "dropout.h"

constexpr int kDropoutThreads = 256;

namespace kl {

// Four consecutive elements starting at a multiple of 4, as floats.
template <typename T>
__device__ __forceinline__ void load4(const T* __restrict__ x, int64_t group, float (&f)[4]);
template <>
__device__ __forceinline__ void load4<float>(const float* __restrict__ x, int64_t group, float (&f)[4]) {
  const float4 v = __ldg(reinterpret_cast<const float4*>(x) + group);
  f[0] = v.x;
  f[1] = v.y;
  f[2] = v.z;
  f[3] = v.w;
}
template <>
__device__ __forceinline__ void load4<bf16>(const bf16* __restrict__ x, int64_t group, float (&f)[4]) {
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(x) + group);
  f[0] = __uint_as_float(v.x << 16);
  f[1] = __uint_as_float(v.x & 0xffff0000u);
  f[2] = __uint_as_float(v.y << 16);
  f[3] = __uint_as_float(v.y & 0xffff0000u);
}

template <typename T>
__device__ __forceinline__ void store4(T* __restrict__ out, int64_t group, const float (&f)[4]);
template <>
__device__ __forceinline__ void store4<float>(float* __restrict__ out, int64_t group, const float (&f)[4]) {
  reinterpret_cast<float4*>(out)[group] = make_float4(f[0], f[1], f[2], f[3]);
}
template <>
__device__ __forceinline__ void store4<bf16>(bf16* __restrict__ out, int64_t group, const float (&f)[4]) {
  reinterpret_cast<uint2*>(out)[group] = make_uint2(pack_bf16x2(f[0], f[1]), pack_bf16x2(f[2], f[3]));
}

}  // namespace kl

template <typename T>
__global__ void __launch_bounds__(kDropoutThreads)
    dropout_philox(const T* __restrict__ x, T* __restrict__ out, int64_t n, uint32_t key0, uint32_t key1,
                   float p, float scale, bool vec) {
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const kl::U32x4 counter{static_cast<uint32_t>(g), static_cast<uint32_t>(static_cast<uint64_t>(g) >> 32), 0u,
                            0u};
    const kl::U32x4 r = kl::philox4x32_10(counter, key0, key1);
    const uint32_t words[4] = {r.x, r.y, r.z, r.w};
    const int64_t i0 = g * 4;
    if (vec && i0 + 4 <= n) {
      float f[4];
      kl::load4<T>(x, g, f);
#pragma unroll
      for (int k = 0; k < 4; ++k) f[k] = kl::uniform24(words[k]) >= p ? f[k] * scale : 0.0f;
      kl::store4<T>(out, g, f);
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int64_t i = i0 + k;
        if (i < n) {
          const float v = kl::to_float(x[i]);
          out[i] = kl::from_float<T>(kl::uniform24(words[k]) >= p ? v * scale : 0.0f);
        }
      }
    }
  }
}

namespace kl {
namespace {

int philox(const void* xv, void* outv, int64_t n, uint64_t seed, float p, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const bool vec = aligned16(xv) && aligned16(outv);
    const float scale = p < 1.0f ? static_cast<float>(1.0 / (1.0 - static_cast<double>(p))) : 0.0f;
    const unsigned grid = grid_for(cdiv(n, 4), kDropoutThreads, static_cast<int64_t>(num_sms()) * 16);
    dropout_philox<T><<<grid, kDropoutThreads, 0, stream>>>(
        static_cast<const T*>(xv), static_cast<T*>(outv), n, static_cast<uint32_t>(seed),
        static_cast<uint32_t>(seed >> 32), p, scale, vec);
    return launch_status();
  });
}

}  // namespace

KL_STEP(dropout, philox);

}  // namespace kl

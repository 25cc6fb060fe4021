// Pieces shared by the kernellab CUDA kernels: dtype conversions, 16-byte vector packs,
// warp and block reductions, device queries and the Philox4x32-10 generator.
// Plain CUDA: no torch headers.
#pragma once

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernellab.h"

namespace kl {

using bf16 = __nv_bfloat16;

// ---- host helpers ---------------------------------------------------------------------------

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

constexpr int kMaxDevices = 64;

// Device attribute of the current device, queried once per device and cached.
inline int cached_device_attribute(cudaDeviceAttr attr, std::atomic<int>* cache, int fallback) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    return fallback;
  }
  int value = cache[dev].load(std::memory_order_relaxed);
  if (value > 0) {
    return value;
  }
  if (cudaDeviceGetAttribute(&value, attr, dev) != cudaSuccess || value <= 0) {
    cudaGetLastError();  // clear the (non-sticky) error so that the next launch check is clean
    return fallback;
  }
  cache[dev].store(value, std::memory_order_relaxed);
  return value;
}

// Streaming multiprocessors of the current device (132 on the H200).
inline int num_sms() {
  static std::atomic<int> cache[kMaxDevices];
  return cached_device_attribute(cudaDevAttrMultiProcessorCount, cache, 132);
}

// Largest dynamic shared memory one block may opt into (227 KB on Hopper).
inline int max_smem_optin() {
  static std::atomic<int> cache[kMaxDevices];
  return cached_device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, cache, 48 * 1024);
}

// Compute capability 9.0 or newer on the current device (clusters, bulk copies, mbarriers).
inline bool sm90_or_newer() {
  static std::atomic<int> cache[kMaxDevices];
  return cached_device_attribute(cudaDevAttrComputeCapabilityMajor, cache, 0) >= 9;
}

// Status of the launch just made (0 when it went through).
inline int launch_status() { return static_cast<int>(cudaGetLastError()); }

// Grid for a grid-stride loop: enough blocks for `work` items, at most `cap` blocks.
inline unsigned grid_for(int64_t work, int block, int64_t cap) {
  int64_t blocks = cdiv(work, block);
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks);
}

// Threads for one block per row: about four 16-byte vectors (or scalars) per thread,
// a multiple of the warp size, between 32 and 1024.
inline int row_block_threads(int64_t units) {
  int64_t t = (cdiv(units, 4) + 31) / 32 * 32;
  if (t < 32) t = 32;
  if (t > 1024) t = 1024;
  return static_cast<int>(t);
}

// ---- scalar conversions ---------------------------------------------------------------------

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float v) {
  return __float2bfloat16_rn(v);
}

template <typename T>
__device__ __forceinline__ T from_double(double v);
template <>
__device__ __forceinline__ float from_double<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ bf16 from_double<bf16>(double v) {
  return __double2bfloat16(v);  // one rounding, double -> bf16
}

// ---- a step's one dtype switch ---------------------------------------------------------------
template <typename T>
struct Type {
  using type = T;
};

// f(Type<T>{}) with T the element type of `dtype` (float or bf16):
//   return by_dtype(dtype, [&](auto t) { using T = typename decltype(t)::type; return run<T>(...); });
template <typename F>
int by_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(Type<float>{});
    case DType::kBFloat16:
      return f(Type<bf16>{});
  }
  return kErrUnsupportedDtype;
}

// ---- 16-byte packs: a uint4 holds 4 fp32 or 8 bf16 ------------------------------------------

template <typename T>
struct Pack;

template <>
struct Pack<float> {
  static constexpr int N = 4;
  __device__ __forceinline__ static void unpack(const uint4& r, float (&f)[N]) {
    f[0] = __uint_as_float(r.x);
    f[1] = __uint_as_float(r.y);
    f[2] = __uint_as_float(r.z);
    f[3] = __uint_as_float(r.w);
  }
  __device__ __forceinline__ static uint4 pack(const float (&f)[N]) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                      __float_as_uint(f[3]));
  }
};

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  uint32_t bits;
  memcpy(&bits, &h, sizeof(bits));
  return bits;
}

template <>
struct Pack<bf16> {
  static constexpr int N = 8;
  // bf16 is the upper half of an fp32: element 2k sits in the low 16 bits of word k.
  __device__ __forceinline__ static void unpack(const uint4& r, float (&f)[N]) {
    const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      f[2 * k] = __uint_as_float(w[k] << 16);
      f[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
    }
  }
  __device__ __forceinline__ static uint4 pack(const float (&f)[N]) {
    return make_uint4(pack_bf16x2(f[0], f[1]), pack_bf16x2(f[2], f[3]), pack_bf16x2(f[4], f[5]),
                      pack_bf16x2(f[6], f[7]));
  }
};

// 16-byte global load / store of the vector with index `i` (i counts 16-byte vectors).
__device__ __forceinline__ uint4 load16(const void* base, int64_t i) {
  return __ldg(reinterpret_cast<const uint4*>(base) + i);
}
__device__ __forceinline__ void store16(void* base, int64_t i, const uint4& v) {
  reinterpret_cast<uint4*>(base)[i] = v;
}

// ---- one row per block: 16-byte vectors or scalars -----------------------------------------
// Row kernels walk a row in "units": a 16-byte vector of N elements when VEC (cols % N == 0 and
// 16-byte aligned pointers), else one element. Thread t owns units t, t + blockDim.x, ... in
// every pass, so a row cached in shared memory is only ever read back by the thread that wrote
// it; the cache is fp32, read and written 16 bytes at a time when VEC.

template <typename T, bool VEC>
struct RowIO {
  static constexpr int N = VEC ? Pack<T>::N : 1;

  __device__ __forceinline__ static void load(const T* __restrict__ row, int unit, float (&f)[N]) {
    if constexpr (VEC) {
      Pack<T>::unpack(load16(row, unit), f);
    } else {
      f[0] = to_float(row[unit]);
    }
  }
  __device__ __forceinline__ static void store(T* __restrict__ row, int unit, const float (&f)[N]) {
    if constexpr (VEC) {
      store16(row, unit, Pack<T>::pack(f));
    } else {
      row[unit] = from_float<T>(f[0]);
    }
  }
  __device__ __forceinline__ static void cache_load(const float* cache, int unit, float (&f)[N]) {
    if constexpr (N == 1) {
      f[0] = cache[unit];
    } else {
#pragma unroll
      for (int q = 0; q < N / 4; ++q) {
        const float4 v = reinterpret_cast<const float4*>(cache + unit * N)[q];
        f[4 * q] = v.x;
        f[4 * q + 1] = v.y;
        f[4 * q + 2] = v.z;
        f[4 * q + 3] = v.w;
      }
    }
  }
  __device__ __forceinline__ static void cache_store(float* cache, int unit, const float (&f)[N]) {
    if constexpr (N == 1) {
      cache[unit] = f[0];
    } else {
#pragma unroll
      for (int q = 0; q < N / 4; ++q) {
        reinterpret_cast<float4*>(cache + unit * N)[q] =
            make_float4(f[4 * q], f[4 * q + 1], f[4 * q + 2], f[4 * q + 3]);
      }
    }
  }
};

// Shared memory of a row kernel: 32 floats of reduction scratch, then the cached row.
constexpr int kRowScratchFloats = 32;

inline size_t row_smem_bytes(int64_t cols, bool cached) {
  return sizeof(float) * static_cast<size_t>(kRowScratchFloats + (cached ? cols : 0));
}

// The start of a one-block-per-row kernel (layer_norm_block, rms_norm_block): its row of x and of
// out, its units, and the first pass over the row, which caches each unit in shared memory
// (after the scratch, row_smem_bytes) when CACHED and returns this thread's sum of f(value).
template <typename T, bool VEC>
struct BlockRow {
  using IO = RowIO<T, VEC>;
  static constexpr int N = IO::N;
  float* scratch;
  float* cache;
  const T* xr;
  T* yr;
  int units;

  __device__ __forceinline__ BlockRow(float* smem, const T* __restrict__ x, T* __restrict__ out, int cols)
      : scratch(smem), cache(smem + kRowScratchFloats) {
    const int64_t row = blockIdx.x;
    xr = x + row * cols;
    yr = out + row * cols;
    units = cols / N;
  }

  template <bool CACHED, typename F>
  __device__ __forceinline__ float first_pass(F f) const {
    float s = 0.0f;
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
      float v[N];
      IO::load(xr, u, v);
      if constexpr (CACHED) IO::cache_store(cache, u, v);
#pragma unroll
      for (int j = 0; j < N; ++j) s += f(v[j]);
    }
    return s;
  }

  // Unit u of the row again: from the fp32 copy first_pass<true> cached, else from x.
  template <bool CACHED>
  __device__ __forceinline__ void reload(int u, float (&v)[N]) const {
    if constexpr (CACHED) {
      IO::cache_load(cache, u, v);
    } else {
      IO::load(xr, u, v);
    }
  }
};

// Whether a row of `cols` fp32 values fits in one block's shared memory on this device.
inline bool row_fits_smem(int64_t cols) {
  return row_smem_bytes(cols, true) <= static_cast<size_t>(max_smem_optin());
}

// Raise a kernel's dynamic shared-memory limit when it may need more than the default: 48 KB for
// static and dynamic together (our kernels' static shared memory stays under 2 KB; exactly 48 KB
// of dynamic memory beside it failed to launch, "invalid argument").
template <typename Kernel>
inline int allow_smem(Kernel kernel, size_t bytes) {
  if (bytes + 2048 <= 48 * 1024) return kOk;
  return static_cast<int>(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// Kernel bodies that use sm_90 features (clusters, bulk copies) compile to nothing before
// sm_90; the host never launches them there (sm90_or_newer).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KL_SM90_BODY 0
#else
#define KL_SM90_BODY 1
#endif

// exp2 on the special-function unit (ex2.approx: about 2 ulp).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ---- reductions -----------------------------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Block-wide reduction for blockDim.x a multiple of 32 (at most 1024): each warp reduces its
// values with `warp_op` (every lane getting the warp's result), lane 0 publishes it in
// `scratch` (32 values of shared memory, reusable by the next call), and every warp reduces
// those; every thread gets the result.
template <typename V, typename WarpOp>
__device__ __forceinline__ V block_reduce(V v, V* scratch, V identity, WarpOp warp_op) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  v = warp_op(v);
  __syncthreads();  // the previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < nwarps ? scratch[lane] : identity;
  return warp_op(v);
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
  return block_reduce(v, scratch, 0.0f, [](float x) { return warp_sum(x); });
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  return block_reduce(v, scratch, -INFINITY, [](float x) { return warp_max(x); });
}

// Count, mean and sum of squared deviations from the mean (M2) of a set of values, for a
// variance from one pass: parts merge by Chan et al.'s update, each part centred on its own
// mean, so no E[x^2] - E[x]^2 cancellation.
struct Moments {
  float n, mean, m2;
};

// Merge b into a; a.n + b.n > 0.
__device__ __forceinline__ Moments merge_moments(Moments a, Moments b) {
  const float n = a.n + b.n;
  const float delta = b.mean - a.mean;
  const float wb = __fdividef(b.n, n);
  return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.n * wb};
}

// Shuffled down, then lane 0's total broadcast, so that every lane holds the same bits.
__device__ __forceinline__ Moments warp_moments(Moments m) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Moments o{__shfl_down_sync(0xffffffffu, m.n, offset), __shfl_down_sync(0xffffffffu, m.mean, offset),
                    __shfl_down_sync(0xffffffffu, m.m2, offset)};
    if (o.n > 0.0f) m = m.n > 0.0f ? merge_moments(m, o) : o;
  }
  return {__shfl_sync(0xffffffffu, m.n, 0), __shfl_sync(0xffffffffu, m.mean, 0), __shfl_sync(0xffffffffu, m.m2, 0)};
}

// Block-wide merge; `scratch` holds 96 floats of shared memory (32 Moments).
__device__ __forceinline__ Moments block_moments(Moments m, float* scratch) {
  static_assert(sizeof(Moments) == 3 * sizeof(float), "Moments packs three floats");
  return block_reduce(m, reinterpret_cast<Moments*>(scratch), Moments{0.0f, 0.0f, 0.0f},
                      [](Moments x) { return warp_moments(x); });
}

// ---- Philox4x32-10 (Salmon et al., SC'11; the generator of Random123 and cuRAND) ------------

struct U32x4 {
  uint32_t x, y, z, w;
};

__host__ __device__ __forceinline__ uint32_t mulhi32(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// Ten rounds of Philox4x32 on counter `c` with key (k0, k1).
__host__ __device__ __forceinline__ U32x4 philox4x32_10(U32x4 c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = mulhi32(kM0, c.x), lo0 = kM0 * c.x;
    const uint32_t hi1 = mulhi32(kM1, c.z), lo1 = kM1 * c.z;
    c = U32x4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

// Uniform in [0, 1) from the top 24 bits: exact in fp32, never 1.0.
__host__ __device__ __forceinline__ float uniform24(uint32_t r) {
  return static_cast<float>(r >> 8) * (1.0f / 16777216.0f);
}

}  // namespace kl

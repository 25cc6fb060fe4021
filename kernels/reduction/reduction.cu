// Sum reductions, accumulated in fp32 (bf16 inputs convert on load).
//
// reduce_sum: the whole tensor into one fp32 (the launcher zeroes it first), a ladder:
//   reduce_sum_atomic        one atomicAdd per element, all on the same address, into an fp64
//                            accumulator (an fp32 one stalls once the sum passes 2^25: each
//                            increment under half an ulp), then one thread stores it as fp32.
//   reduce_sum_smem_tree     one element per thread, a shared-memory tree per block of 256,
//                            one atomicAdd per block.
//   reduce_sum_warp_shuffle  one element per thread, __shfl_down_sync within each warp, then
//                            one warp over the warp sums, one atomicAdd per block.
//   reduce_sum_vec4          grid-stride over 16-byte vectors, four in flight per thread into
//                            four fp32 accumulators, a grid of one wave of resident blocks,
//                            warp shuffles, one atomicAdd per block.
#include "common.cuh"
#include "reduction.h"

constexpr int kReduceThreads = 256;
constexpr int kReduceVecThreads = 512;
constexpr int kReduceIlp = 4;

namespace kl {

// Warp sum with __shfl_down_sync: lane 0 ends with the total.
__device__ __forceinline__ float warp_sum_down(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Sum of the block's values into *out with one atomic: warp shuffles, then warp 0 over the
// warp sums. Every thread of the block must call it.
__device__ __forceinline__ void block_sum_atomic(float v, float* out) {
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_sum_down(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
    v = warp_sum_down(v);
    if (lane == 0) atomicAdd(out, v);
  }
}

}  // namespace kl

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_sum_atomic(const T* __restrict__ x, double* acc, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(acc, static_cast<double>(kl::to_float(x[i])));
}

__global__ void store_sum_fp32(const double* __restrict__ acc, float* __restrict__ out) {
  *out = static_cast<float>(*acc);
}

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

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    reduce_sum_warp_shuffle(const T* __restrict__ x, float* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  kl::block_sum_atomic(i < n ? kl::to_float(x[i]) : 0.0f, out);
}

template <typename T>
__global__ void __launch_bounds__(kReduceVecThreads)
    reduce_sum_vec4(const T* __restrict__ x, float* out, int64_t n, int64_t nvec) {
  using kl::Pack;
  constexpr int N = Pack<T>::N;
  constexpr int ILP = kReduceIlp;
  const int64_t nthreads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc[ILP] = {};
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
      for (int j = 0; j < N; ++j) acc[k] += f[j];
    }
  }
#pragma unroll
  for (int k = 0; k < ILP - 1; ++k) {
    const int64_t i = base + k * nthreads;
    if (i < nvec) {
      float f[N];
      Pack<T>::unpack(kl::load16(x, i), f);
#pragma unroll
      for (int j = 0; j < N; ++j) acc[k] += f[j];
    }
  }
  for (int64_t i = nvec * N + tid; i < n; i += nthreads) acc[ILP - 1] += kl::to_float(x[i]);
  kl::block_sum_atomic((acc[0] + acc[1]) + (acc[2] + acc[3]), out);
}

namespace kl {
namespace {

template <typename T>
int run_reduce_sum(const T* x, float* out, double* scratch, int64_t n, int variant, cudaStream_t stream) {
  const int64_t blocks = cdiv(n, kReduceThreads);
  switch (variant) {
    case kReduceSumAtomic: {
      if (blocks > INT_MAX) return kErrBadSize;
      if (scratch == nullptr) return kErrNoScratch;
      const cudaError_t zero = cudaMemsetAsync(scratch, 0, sizeof(double), stream);
      if (zero != cudaSuccess) return static_cast<int>(zero);
      reduce_sum_atomic<T><<<static_cast<unsigned>(blocks), kReduceThreads, 0, stream>>>(x, scratch, n);
      const int status = launch_status();
      if (status != kOk) return status;
      store_sum_fp32<<<1, 1, 0, stream>>>(scratch, out);
      return launch_status();
    }
    case kReduceSumSmemTree:
      if (blocks > INT_MAX) return kErrBadSize;
      reduce_sum_smem_tree<T><<<static_cast<unsigned>(blocks), kReduceThreads, 0, stream>>>(x, out, n);
      return launch_status();
    case kReduceSumWarpShuffle:
      if (blocks > INT_MAX) return kErrBadSize;
      reduce_sum_warp_shuffle<T><<<static_cast<unsigned>(blocks), kReduceThreads, 0, stream>>>(x, out, n);
      return launch_status();
    case kReduceSumVec4: {
      const int64_t nvec = aligned16(x) ? n / Pack<T>::N : 0;
      const int64_t work = cdiv(nvec > 0 ? nvec : n, kReduceIlp);
      // One wave: 2048 resident threads per SM = 4 blocks of 512.
      const unsigned grid = grid_for(work, kReduceVecThreads, static_cast<int64_t>(num_sms()) * 4);
      reduce_sum_vec4<T><<<grid, kReduceVecThreads, 0, stream>>>(x, out, n, nvec);
      return launch_status();
    }
    default:
      return kErrUnknownVariant;
  }
}

}  // namespace

int reduce_sum_launch(const void* x, float* out, double* scratch, int64_t n, DType dtype, int variant,
                      cudaStream_t stream) {
  if (variant < 0 || variant >= count_of(kReduceSumVariants)) return kErrUnknownVariant;
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return kErrUnsupportedDtype;
  if (n < 0) return kErrBadSize;
  const cudaError_t zero = cudaMemsetAsync(out, 0, sizeof(float), stream);
  if (zero != cudaSuccess) return static_cast<int>(zero);
  if (n == 0) return kOk;
  if (dtype == DType::kFloat32) return run_reduce_sum(static_cast<const float*>(x), out, scratch, n, variant, stream);
  return run_reduce_sum(static_cast<const bf16*>(x), out, scratch, n, variant, stream);
}

}  // namespace kl

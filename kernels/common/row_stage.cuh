// Row kernels on Hopper: one row per CTA, staged in shared memory in its own dtype by bulk
// copies (the TMA engine's 1-D cp.async.bulk), completion counted on an mbarrier.
//
// Why: a row held in registers costs registers per element, so at 32768 columns one CTA of
// 1024 threads fills an SM and its load, reduce and store phases run one after another. A
// row staged in shared memory costs no registers and no load instructions: at 4096 x 32768
// bf16 (64 KiB a row) three CTAs of 256 threads share an SM, one loading while the others
// reduce or write, and the reductions read shared memory, not DRAM, as often as they like.
//
// Needs sm_90, a row of a multiple of 16 bytes, 16-byte aligned rows, and a row that fits the
// opt-in shared memory; host code asks `staged_rows_fit` and falls back to the family's
// one-block-per-row kernel otherwise.
#pragma once

#include <algorithm>

#include "common.cuh"

namespace kl {

constexpr int kStageThreads = 256;            // most threads of one CTA
constexpr uint32_t kStageChunk = 16u * 1024;  // bytes per bulk copy

// Threads for a staged row of `units` 16-byte vectors: about four per thread, at most 256 so
// that several rows share an SM.
inline int staged_threads(int64_t units) {
  int64_t t = (cdiv(units, 4) + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : t > kStageThreads ? kStageThreads : t);
}

// Static shared memory of a staged kernel besides the row (reduction scratch, mbarrier), with room
// to spare.
constexpr size_t kStageStaticBytes = 2048;

// Whether rows of `row_bytes` bytes can be staged on this device; `rows_aligned`: every row
// starts 16-byte aligned (base pointer aligned and row_bytes a multiple of 16).
inline bool staged_rows_fit(int64_t row_bytes, bool rows_aligned) {
  return rows_aligned && row_bytes % 16 == 0 && sm90_or_newer() &&
         row_bytes + static_cast<int64_t>(kStageStaticBytes) <= max_smem_optin();
}

// Let `kernel` take `bytes` of dynamic shared memory, with the shared-memory carveout at its
// maximum so that as many staged rows as fit share an SM.
template <typename Kernel>
inline int allow_staged_smem(Kernel kernel, size_t bytes) {
  const int status = allow_smem(kernel, bytes);
  if (status != kOk) return status;
  return static_cast<int>(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
}

// Launch `kernel` with one CTA per row and `row_bytes` of dynamic shared memory.
template <typename Kernel, typename... Args>
int launch_staged_rows(Kernel kernel, int64_t rows, int64_t row_bytes, int threads, cudaStream_t stream,
                       Args... args) {
  if (rows > INT_MAX) return kErrBadSize;
  const size_t smem = static_cast<size_t>(row_bytes);
  const int status = allow_staged_smem(kernel, smem);
  if (status != kOk) return status;
  kernel<<<static_cast<unsigned>(rows), threads, smem, stream>>>(args...);
  return launch_status();
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// mbarriers counting bulk copies. Thread 0 initialises a barrier (one arrival per phase) and arms
// each phase with the bytes to expect, issuing the copies itself; every thread then waits for
// the phase's parity. A barrier must be initialised, and that made visible (a __syncthreads),
// before any thread waits on it.
__device__ __forceinline__ void init_barrier(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// Thread 0: copy `bytes` (a multiple of 16) from global `src` to shared `dst`, both 16-byte
// aligned, in bulk copies completing on `bar`'s current phase.
__device__ __forceinline__ void issue_row(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t b = smem_addr(bar);
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes) : "memory");
  const uint32_t d = smem_addr(dst);
  const char* s = static_cast<const char*>(src);
  for (uint32_t off = 0; off < bytes; off += kStageChunk) {
    const uint32_t n = bytes - off < kStageChunk ? bytes - off : kStageChunk;
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(d + off),
        "l"(s + off), "r"(n), "r"(b)
        : "memory");
  }
#endif
}

__device__ __forceinline__ void wait_barrier(uint64_t* bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "STAGE_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra STAGE_WAIT;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#endif
}

// Copy one row to shared memory and wait for it: a single-use barrier. Call once per CTA, by
// all its threads.
__device__ __forceinline__ void stage_row(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  if (threadIdx.x == 0) {
    init_barrier(bar);
    issue_row(dst, src, bytes, bar);
  }
  __syncthreads();  // no thread polls the barrier before it is initialised
  wait_barrier(bar, 0);
}

// Resident rows: a persistent CTA holds its per-column parameters (weight, bias) in registers,
// loaded once, and walks rows blockIdx.x, + gridDim.x, ... through S staged row buffers, the
// next S - 1 rows' bulk copies in flight while it works on the current one. Rows of at most
// kResidentVecs vectors per thread of a CTA of at most 1024 threads.
constexpr int kResidentVecs = 4;

inline int resident_threads(int64_t units) {
  int64_t t = (cdiv(units, kResidentVecs) + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : t);
}

inline bool resident_rows_fit(int64_t row_bytes, bool rows_aligned, int stages) {
  return rows_aligned && row_bytes % 16 == 0 && sm90_or_newer() && row_bytes / 16 <= kResidentVecs * 1024 &&
         stages * row_bytes + static_cast<int64_t>(kStageStaticBytes) <= max_smem_optin();
}

// Launch `kernel` persistent: as many CTAs as fit on the device at once (at most one per row),
// each with `stages` row buffers of dynamic shared memory.
template <typename Kernel, typename... Args>
int launch_resident_rows(Kernel kernel, int64_t rows, int64_t row_bytes, int stages, int threads,
                         cudaStream_t stream, Args... args) {
  const size_t smem = static_cast<size_t>(stages * row_bytes);
  int status = allow_staged_smem(kernel, smem);
  if (status != kOk) return status;
  int per_sm = 0;
  status = static_cast<int>(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  if (status != kOk) return status;
  const int64_t grid = std::min<int64_t>(rows, static_cast<int64_t>(num_sms()) * std::max(per_sm, 1));
  kernel<<<static_cast<unsigned>(grid), threads, smem, stream>>>(args...);
  return launch_status();
}

// The loop of a resident CTA over its rows: body(row, buffer) for each, with the row staged in
// `buffer` (S buffers of `units` vectors at `staged`). The next copy into a buffer is issued
// once every thread is done with it.
template <int S, typename Body>
__device__ __forceinline__ void resident_rows(uint4* staged, const char* src, int64_t rows, int units,
                                              uint64_t (&bars)[S], Body body) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t bytes = static_cast<uint32_t>(units) * 16u;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      init_barrier(&bars[s]);
      const int64_t row = blockIdx.x + s * static_cast<int64_t>(gridDim.x);
      if (row < rows) issue_row(staged + s * units, src + row * bytes, bytes, &bars[s]);
    }
  }
  __syncthreads();
  int s = 0;
  uint32_t parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    wait_barrier(&bars[s], parity);
    body(row, staged + s * units);
    __syncthreads();  // every thread is done reading the buffer
    const int64_t next = row + S * static_cast<int64_t>(gridDim.x);
    if (threadIdx.x == 0 && next < rows) {
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the generic reads before the copy
      issue_row(staged + s * units, src + next * bytes, bytes, &bars[s]);
    }
    if (++s == S) {
      s = 0;
      parity ^= 1u;
    }
  }
#endif
}

// This thread's fold of a staged row's values, vector by vector in the order of its vectors
// (threadIdx.x, threadIdx.x + blockDim.x, ...): acc = op(acc, value) from `init`.
template <typename T, typename Op>
__device__ __forceinline__ float staged_fold(const uint4* staged, int units, float init, Op op) {
  constexpr int N = Pack<T>::N;
  float acc = init;
  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    float v[N];
    Pack<T>::unpack(staged[u], v);
#pragma unroll
    for (int j = 0; j < N; ++j) acc = op(acc, v[j]);
  }
  return acc;
}

// This thread's Moments of a staged row's values in one pass: sums of x - k and (x - k)^2 with
// k its own first value, turned into a mean and M2 at the end. Three instructions per value
// (a Chan merge per vector took about twice as many: issue-bound). The shift keeps the
// cancellation in M2 = q - s^2 / n below n * eps relative, n this thread's count (at most a
// few hundred values): (k - mean)^2 <= M2 because k is one of the values.
template <typename T>
__device__ __forceinline__ Moments staged_moments(const uint4* staged, int units) {
  constexpr int N = Pack<T>::N;
  if (static_cast<int>(threadIdx.x) >= units) return Moments{0.0f, 0.0f, 0.0f};
  float first[N];
  Pack<T>::unpack(staged[threadIdx.x], first);
  const float k = first[0];
  float s = 0.0f, q = 0.0f;
  int n = 0;
  for (int u = threadIdx.x; u < units; u += blockDim.x) {
    float v[N];
    Pack<T>::unpack(staged[u], v);
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const float d = v[j] - k;
      s += d;
      q = fmaf(d, d, q);
    }
    n += N;
  }
  const float mean = s / static_cast<float>(n);
  return Moments{static_cast<float>(n), k + mean, fmaxf(q - s * mean, 0.0f)};
}

// The per-column parameters (weight, bias) of K vectors per thread, from vector u0 on with a
// stride of blockDim.x: the loads of one step of a staged row's write pass (L2 hits).
template <typename T, int P, int K = 4>
struct ParamStep {
  uint4 raw[K][P];

  __device__ __forceinline__ void load(const T* const (&params)[P], int u0, int units) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int u = u0 + k * static_cast<int>(blockDim.x);
#pragma unroll
      for (int p = 0; p < P; ++p) raw[k][p] = u < units ? load16(params[p], u) : make_uint4(0, 0, 0, 0);
    }
  }
};

// The write pass of a staged row with P per-column parameters: for each vector u of the row,
// op(x, q) turns the staged values x and the parameters q[p] = params[p][u] into the output,
// stored to out. K vectors per thread per step, their parameter loads all issued first (one at
// a time, each load's latency stalled its vector). `step` arrives holding the first step's
// loads, issued by the caller: just before, or before the statistics to hide their latency.
template <typename T, int P, int K, typename Op>
__device__ __forceinline__ void staged_write(const uint4* staged, int units, const T* const (&params)[P],
                                             T* __restrict__ out, ParamStep<T, P, K>& step, Op op) {
  constexpr int N = Pack<T>::N;
  for (int u0 = threadIdx.x; u0 < units; u0 += K * blockDim.x) {
    if (u0 != static_cast<int>(threadIdx.x)) step.load(params, u0, units);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int u = u0 + k * static_cast<int>(blockDim.x);
      if (u < units) {
        float x[N], q[P][N];
        Pack<T>::unpack(staged[u], x);
#pragma unroll
        for (int p = 0; p < P; ++p) Pack<T>::unpack(step.raw[k][p], q[p]);
        op(x, q);
        store16(out, u, Pack<T>::pack(x));
      }
    }
  }
}

}  // namespace kl

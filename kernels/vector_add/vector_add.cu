// Vector add, out = a + b: two reads and one write per element.
//
// The family's one CUDA step, "vec4" (kernel vector_add_vec4, registered in the step table of
// vector_add.h): 16-byte loads and stores (4 fp32 or 8 bf16 per vector) in a grid-stride loop,
// then a scalar tail for the last n % (16 / sizeof(T)) elements. A pointer that is not 16-byte
// aligned (a view with an odd storage offset) sends every element down the scalar path.
#include "common.cuh"
#include "vector_add.h"

constexpr int kVectorAddThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kVectorAddThreads)
    vector_add_vec4(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, int64_t n,
                    int64_t nvec) {
  using kl::Pack;
  constexpr int N = Pack<T>::N;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < nvec; i += stride) {
    float fa[N], fb[N];
    Pack<T>::unpack(kl::load16(a, i), fa);
    Pack<T>::unpack(kl::load16(b, i), fb);
#pragma unroll
    for (int j = 0; j < N; ++j) fa[j] += fb[j];
    kl::store16(out, i, Pack<T>::pack(fa));
  }
  for (int64_t i = nvec * N + tid; i < n; i += stride) {
    out[i] = kl::from_float<T>(kl::to_float(a[i]) + kl::to_float(b[i]));
  }
}

namespace kl {
namespace {

int vec4(const void* a, const void* b, void* out, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const bool vec = aligned16(a) && aligned16(b) && aligned16(out);
    const int64_t nvec = vec ? n / Pack<T>::N : 0;
    const int64_t work = vec ? nvec : n;
    const unsigned grid = grid_for(work, kVectorAddThreads, static_cast<int64_t>(num_sms()) * 32);
    vector_add_vec4<T><<<grid, kVectorAddThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n, nvec);
    return launch_status();
  });
}

}  // namespace

KL_STEP(vector_add, vec4);

}  // namespace kl

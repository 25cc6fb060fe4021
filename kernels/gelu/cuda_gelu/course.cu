// GeLU step "course": the course's kernel, one element per thread, 1024 threads per block. Its
// double literals and tanh(double) make the arithmetic fp64. bf16 loads convert to float first;
// the result is rounded once to the output type.
#include "gelu.cuh"

constexpr int kGeluCourseThreads = 1024;

template <typename T>
__global__ void gelu_course(const T* in, T* out, int num_elements) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;

  if (i < num_elements) {
    const float x = kl::to_float(in[i]);
    out[i] = kl::from_double<T>(0.5 * x * (1.0 + tanh(0.79788456 * (x + 0.044715 * x * x * x))));
  }
}

namespace kl {
namespace {

int course(const void* xv, void* outv, int64_t n, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    const T* x = static_cast<const T*>(xv);
    T* out = static_cast<T*>(outv);
    // The course kernel indexes with int: the last block's thread ids must stay below INT_MAX.
    if (n > INT_MAX - kGeluCourseThreads) return kErrBadSize;
    const unsigned grid = static_cast<unsigned>(cdiv(n, kGeluCourseThreads));
    gelu_course<T><<<grid, kGeluCourseThreads, 0, stream>>>(x, out, static_cast<int>(n));
    return launch_status();
  });
}

}  // namespace

KL_STEP(gelu, course);

}  // namespace kl

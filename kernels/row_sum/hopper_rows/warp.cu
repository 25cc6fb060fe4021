// row_sum step "warp": one warp per row (row_sum.cuh).
#include "row_sum.cuh"

namespace kl {
namespace {

int warp(const void* x, float* out, int64_t rows, int64_t cols, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    return launch_row_sum_warp(static_cast<const T*>(x), out, rows, cols, stream);
  });
}

}  // namespace

KL_STEP(row_sum, warp);

}  // namespace kl

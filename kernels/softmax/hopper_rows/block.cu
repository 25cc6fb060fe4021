// softmax step "block": one block per row (softmax.cuh).
#include "softmax.cuh"

namespace kl {
namespace {

int block(const void* x, void* out, int64_t rows, int64_t cols, DType dtype, cudaStream_t stream) {
  return by_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    return launch_softmax_block(static_cast<const T*>(x), static_cast<T*>(out), rows, cols, stream);
  });
}

}  // namespace

KL_STEP(softmax, block);

}  // namespace kl

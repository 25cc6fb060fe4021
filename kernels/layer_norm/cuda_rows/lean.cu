// layer_norm step "lean": onepass's staged kernel with two vectors per write step instead of four, in 32
// registers, so that eight CTAs of 256 threads share an SM. Rows that cannot be staged take the
// block kernel.
#include "layer_norm.cuh"

template <typename T>
__global__ void __launch_bounds__(kl::kStageThreads, 8)
    layer_norm_lean(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                    T* __restrict__ out, int cols, float eps) {
#if KL_SM90_BODY
  staged_row<T, true, true, 2>(x, w, b, out, cols, eps);
#endif
}

namespace kl {
namespace {

KL_LAYER_NORM_STEP(lean, (launch_layer_norm_staged(layer_norm_lean<T>, x, w, b, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(layer_norm, lean);

}  // namespace kl

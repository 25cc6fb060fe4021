// layer_norm step "prefetch": the staged kernel with the write pass's first weight and bias loads issued
// before the row has arrived (layer_norm.cuh).
#include "layer_norm.cuh"

namespace kl {
namespace {

KL_LAYER_NORM_STEP(prefetch, (launch_layer_norm_staged(layer_norm_staged<T, true, false>, x, w, b, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(layer_norm, prefetch);

}  // namespace kl

// layer_norm step "onepass": the prefetch kernel with mean and variance from one pass over the staged row
// (layer_norm.cuh).
#include "layer_norm.cuh"

namespace kl {
namespace {

KL_LAYER_NORM_STEP(onepass, (launch_layer_norm_staged(layer_norm_staged<T, true, true>, x, w, b, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(layer_norm, onepass);

}  // namespace kl

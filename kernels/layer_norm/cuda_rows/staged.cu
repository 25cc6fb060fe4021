// layer_norm step "staged": one row per CTA staged in shared memory by bulk copies, two-pass statistics
// (layer_norm.cuh); rows that cannot be staged take the block kernel.
#include "layer_norm.cuh"

namespace kl {
namespace {

KL_LAYER_NORM_STEP(staged, (launch_layer_norm_staged(layer_norm_staged<T, false, false>, x, w, b, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(layer_norm, staged);

}  // namespace kl

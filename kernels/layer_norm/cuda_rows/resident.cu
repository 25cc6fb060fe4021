// layer_norm step "resident": persistent CTAs, weight and bias in registers, rows staged through 2 buffers
// (layer_norm.cuh); rows too long take the prefetch step's kernel.
#include "layer_norm.cuh"

namespace kl {
namespace {

KL_LAYER_NORM_STEP(resident, (launch_layer_norm_resident<T, 2, false>(x, w, b, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(layer_norm, resident);

}  // namespace kl

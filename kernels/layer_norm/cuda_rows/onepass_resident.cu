// layer_norm step "onepass_resident": the resident kernel with 2 row buffers and one-pass statistics
// (layer_norm.cuh); rows too long take the onepass step's kernel.
#include "layer_norm.cuh"

namespace kl {
namespace {

KL_LAYER_NORM_STEP(onepass_resident, (launch_layer_norm_resident<T, 2, true>(x, w, b, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(layer_norm, onepass_resident);

}  // namespace kl

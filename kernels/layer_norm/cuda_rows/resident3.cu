// layer_norm step "resident3": the resident kernel with 3 row buffers (layer_norm.cuh).
#include "layer_norm.cuh"

namespace kl {
namespace {

KL_LAYER_NORM_STEP(resident3, (launch_layer_norm_resident<T, 3, false>(x, w, b, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(layer_norm, resident3);

}  // namespace kl

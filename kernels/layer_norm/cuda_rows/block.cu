// layer_norm step "block": one block per row, the row cached in shared memory where it fits (layer_norm.cuh).
#include "layer_norm.cuh"

namespace kl {
namespace {

KL_LAYER_NORM_STEP(block, launch_layer_norm_block(x, w, b, out, rows, cols, eps, stream))

}  // namespace

KL_STEP(layer_norm, block);

}  // namespace kl

// softmax step "block": one block per row (softmax.cuh).
#include "softmax.cuh"

namespace kl {
namespace {

KL_SOFTMAX_STEP(block, launch_softmax_block(x, out, rows, cols, stream))

}  // namespace

KL_STEP(softmax, block);

}  // namespace kl

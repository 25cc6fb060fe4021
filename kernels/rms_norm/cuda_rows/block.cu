// rms_norm step "block": one block per row, the row cached in shared memory where it fits (rms_norm.cuh).
#include "rms_norm.cuh"

namespace kl {
namespace {

KL_RMS_NORM_STEP(block, launch_rms_norm_block(x, w, out, rows, cols, eps, stream))

}  // namespace

KL_STEP(rms_norm, block);

}  // namespace kl

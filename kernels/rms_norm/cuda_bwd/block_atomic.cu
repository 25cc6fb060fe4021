// rms_norm backward step "block_atomic": one block per row, scalar accesses, dw by atomicAdd into one
// fp32 row (rms_norm_bwd.cuh).
#include "rms_norm_bwd.cuh"

namespace kl {
namespace {

KL_RMS_NORM_BWD_STEP(block_atomic, launch_bwd_atomic(x, dy, w, rstd, dx, dw, scratch, rows, cols, stream))

}  // namespace

KL_STEP(rms_norm_bwd, block_atomic);

}  // namespace kl

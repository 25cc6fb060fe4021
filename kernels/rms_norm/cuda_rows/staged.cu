// rms_norm step "staged": one row per CTA staged in shared memory by bulk copies (rms_norm.cuh); rows that
// cannot be staged take the block kernel.
#include "rms_norm.cuh"

namespace kl {
namespace {

KL_RMS_NORM_STEP(staged, (launch_rms_norm_staged<T, false>(x, w, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(rms_norm, staged);

}  // namespace kl

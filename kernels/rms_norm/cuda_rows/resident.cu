// rms_norm step "resident": persistent CTAs, the weight in registers, rows staged through 2 buffers
// (rms_norm.cuh); rows too long take the prefetch step's kernel.
#include "rms_norm.cuh"

namespace kl {
namespace {

KL_RMS_NORM_STEP(resident, (launch_rms_norm_resident<T, 2>(x, w, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(rms_norm, resident);

}  // namespace kl

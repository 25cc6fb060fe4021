// rms_norm step "prefetch": the staged kernel with the write pass's first weight loads issued before the
// row has arrived (rms_norm.cuh).
#include "rms_norm.cuh"

namespace kl {
namespace {

KL_RMS_NORM_STEP(prefetch, (launch_rms_norm_staged<T, true>(x, w, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(rms_norm, prefetch);

}  // namespace kl

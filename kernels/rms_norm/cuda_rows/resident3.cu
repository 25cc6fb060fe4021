// rms_norm step "resident3": the resident kernel with 3 row buffers (rms_norm.cuh).
#include "rms_norm.cuh"

namespace kl {
namespace {

KL_RMS_NORM_STEP(resident3, (launch_rms_norm_resident<T, 3>(x, w, out, rows, cols, eps, stream)))

}  // namespace

KL_STEP(rms_norm, resident3);

}  // namespace kl

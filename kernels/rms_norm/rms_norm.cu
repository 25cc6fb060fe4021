// RMS norm over the last dimension of a (rows, cols) matrix: the family's step table. Each step is a
// file of hopper_rows/ that registers itself in it; what the steps share is in rms_norm.cuh.
#include "rms_norm.h"

namespace kl {

KL_DEFINE_STEP_TABLE(rms_norm, RmsNormStep)

}  // namespace kl

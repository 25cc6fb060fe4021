// GeLU, tanh approximation: 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3))): the family's
// step table. Each step is a file of cuda_gelu/ that registers itself in it; what the steps share
// is in gelu.cuh.
#include "gelu.h"

namespace kl {

KL_DEFINE_STEP_TABLE(gelu, GeluStep)

}  // namespace kl

// Softmax over the last dimension of a (rows, cols) row-major matrix: the family's step table. Each
// step is a file of hopper_rows/ that registers itself in it; what the steps share is in softmax.cuh.
#include "softmax.h"

namespace kl {

KL_DEFINE_STEP_TABLE(softmax, SoftmaxStep)

}  // namespace kl

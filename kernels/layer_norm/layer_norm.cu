// Layer norm over the last dimension of a (rows, cols) matrix: the family's step table. Each step
// is a file of hopper_rows/ that registers itself in it; what the steps share is in layer_norm.cuh.
#include "layer_norm.h"

namespace kl {

KL_DEFINE_STEP_TABLE(layer_norm, LayerNormStep)

}  // namespace kl

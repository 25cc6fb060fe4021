// Row sums of a (rows, cols) matrix, accumulated in fp32 (bf16 inputs convert on load): the
// family's step table. Each step is a file of hopper_rows/ that registers itself in it; what the
// steps share is in row_sum.cuh.
#include "row_sum.h"

namespace kl {

KL_DEFINE_STEP_TABLE(row_sum, RowSumStep)

}  // namespace kl

// row_sum step "warp": one warp per row (row_sum.cuh).
#include "row_sum.cuh"

namespace kl {
namespace {

KL_ROW_SUM_STEP(warp, launch_row_sum_warp(x, out, rows, cols, stream))

}  // namespace

KL_STEP(row_sum, warp);

}  // namespace kl

// Row sums of a (rows, cols) matrix, accumulated in fp32 (bf16 inputs convert on load): the row_sum
// family's CUDA steps: what each step's launcher takes, their table (steps.h), and the checks every
// launch shares. Each step is a file of cuda_rows/ that registers itself in the table; what the
// steps share is in row_sum.cuh.
#pragma once

#include <climits>

#include "steps.h"

namespace kl {

// A step: out[r] (fp32) = sum of row r of the (rows, cols) matrix x, rows > 0, cols <= INT_MAX.
using RowSumStep = int (*)(const void* x, float* out, int64_t rows, int64_t cols, DType dtype, cudaStream_t stream);
KL_STEP_TABLE(row_sum, RowSumStep);

// The sizes every step takes, then the step: kOk for no rows, kErrBadSize out of range.
inline int row_sum_launch(RowSumStep step, const void* x, float* out, int64_t rows, int64_t cols, DType dtype,
                          cudaStream_t stream) {
  if (rows < 0 || cols < 0 || cols > INT_MAX) return kErrBadSize;
  if (rows == 0) return kOk;
  return step(x, out, rows, cols, dtype, stream);
}

}  // namespace kl

// Softmax over the last dimension of a (rows, cols) row-major matrix: the softmax family's CUDA
// steps: what each step's launcher takes, their table (steps.h), and the checks every launch
// shares. Each step is a file of cuda_rows/ that registers itself in the table; what the steps
// share is in softmax.cuh.
#pragma once

#include <climits>

#include "steps.h"

namespace kl {

// A step: row-wise softmax of a (rows, cols) row-major matrix, 0 < rows, cols <= INT_MAX.
using SoftmaxStep = int (*)(const void* x, void* out, int64_t rows, int64_t cols, DType dtype, cudaStream_t stream);
KL_STEP_TABLE(softmax, SoftmaxStep);

// The sizes every step takes, then the step: kOk for an empty matrix, kErrBadSize out of range.
inline int softmax_launch(SoftmaxStep step, const void* x, void* out, int64_t rows, int64_t cols, DType dtype,
                          cudaStream_t stream) {
  if (rows < 0 || cols < 0 || rows > INT_MAX || cols > INT_MAX) return kErrBadSize;
  if (rows == 0 || cols == 0) return kOk;
  return step(x, out, rows, cols, dtype, stream);
}

}  // namespace kl

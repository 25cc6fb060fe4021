// RMS norm over the last dimension of a (rows, cols) matrix: the rms_norm family's CUDA steps: what
// each step's launcher takes, their table (steps.h), and the checks every launch shares. Each step
// is a file of hopper_rows/ that registers itself in the table; what the steps share is in
// rms_norm.cuh.
#pragma once

#include <climits>

#include "steps.h"

namespace kl {

// A step: out = x * rsqrt(mean(x^2) + eps) * w per row of (rows, cols), w of cols elements,
// 0 < rows, cols <= INT_MAX.
using RmsNormStep = int (*)(const void* x, const void* w, void* out, int64_t rows, int64_t cols, float eps, DType dtype, cudaStream_t stream);
KL_STEP_TABLE(rms_norm, RmsNormStep);

// The sizes every step takes, then the step: kOk for an empty matrix, kErrBadSize out of range.
inline int rms_norm_launch(RmsNormStep step, const void* x, const void* w, void* out, int64_t rows, int64_t cols, float eps, DType dtype, cudaStream_t stream) {
  if (rows < 0 || cols < 0 || rows > INT_MAX || cols > INT_MAX) return kErrBadSize;
  if (rows == 0 || cols == 0) return kOk;
  return step(x, w, out, rows, cols, eps, dtype, stream);
}

}  // namespace kl

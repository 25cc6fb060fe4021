// Layer norm over the last dimension of a (rows, cols) matrix: the layer_norm family's CUDA steps:
// what each step's launcher takes, their table (steps.h), and the checks every launch shares. Each
// step is a file of cuda_rows/ that registers itself in the table; what the steps share is in
// layer_norm.cuh.
#pragma once

#include <climits>

#include "steps.h"

namespace kl {

// A step: out = (x - mean) / sqrt(var + eps) * w + b per row of (rows, cols), w and b of cols
// elements, 0 < rows, cols <= INT_MAX.
using LayerNormStep = int (*)(const void* x, const void* w, const void* b, void* out, int64_t rows, int64_t cols, float eps, DType dtype, cudaStream_t stream);
KL_STEP_TABLE(layer_norm, LayerNormStep);

// The sizes every step takes, then the step: kOk for an empty matrix, kErrBadSize out of range.
inline int layer_norm_launch(LayerNormStep step, const void* x, const void* w, const void* b, void* out, int64_t rows, int64_t cols, float eps, DType dtype, cudaStream_t stream) {
  if (rows < 0 || cols < 0 || rows > INT_MAX || cols > INT_MAX) return kErrBadSize;
  if (rows == 0 || cols == 0) return kOk;
  return step(x, w, b, out, rows, cols, eps, dtype, stream);
}

}  // namespace kl

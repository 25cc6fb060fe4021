// RMS norm over the last dimension of a (rows, cols) matrix: the rms_norm family's CUDA steps: what
// each step's launcher takes, their tables (steps.h), and the checks every launch shares. Each
// forward step is a file of cuda_rows/ that registers itself in the rms_norm table (what they
// share is in rms_norm.cuh); each backward step a file of cuda_bwd/ in the rms_norm_bwd table
// (rms_norm_bwd.cuh).
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

// The backward's scratch: fp32(owner, n) returns n floats of device memory (the binding's, from
// PyTorch's caching allocator: no cudaMalloc per call), or nullptr. A step asks for its dw
// accumulator or partial rows.
struct RmsNormBwdScratch {
  float* (*fp32)(void* owner, int64_t n);
  void* owner;
};

// A backward step, per row of (rows, cols) with xhat = x * rstd[row] (rstd: the forward's fp32
// statistic, one per row): dx = rstd * (w dy - xhat * mean(w dy xhat)), and dw = the sum over the
// rows of dy xhat. x, dy, w, dx, dw of one dtype; 0 < rows, cols <= INT_MAX.
using RmsNormBwdStep = int (*)(const void* x, const void* dy, const void* w, const float* rstd, void* dx, void* dw,
                               const RmsNormBwdScratch& scratch, int64_t rows, int64_t cols, DType dtype,
                               cudaStream_t stream);
KL_STEP_TABLE(rms_norm_bwd, RmsNormBwdStep);

// The sizes every backward step takes, then the step: kOk for an empty matrix (dw of a matrix
// without rows is zero: written here), kErrBadSize out of range.
inline int rms_norm_bwd_launch(RmsNormBwdStep step, const void* x, const void* dy, const void* w, const float* rstd,
                               void* dx, void* dw, const RmsNormBwdScratch& scratch, int64_t rows, int64_t cols,
                               DType dtype, cudaStream_t stream) {
  if (rows < 0 || cols < 0 || rows > INT_MAX || cols > INT_MAX) return kErrBadSize;
  if (cols == 0) return kOk;
  if (rows == 0) {
    const size_t bytes = static_cast<size_t>(cols) * (dtype == DType::kBFloat16 ? 2 : 4);
    return static_cast<int>(cudaMemsetAsync(dw, 0, bytes, stream));  // all-zero bits: 0.0 in fp32 and bf16
  }
  return step(x, dy, w, rstd, dx, dw, scratch, rows, cols, dtype, stream);
}

}  // namespace kl

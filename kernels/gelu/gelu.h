// GeLU, tanh approximation: 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3))). The gelu
// family's CUDA steps: what each step's launcher takes, their table (steps.h), and the checks every
// launch shares. Each step is a file of cuda_gelu/ that registers itself in the table; what the
// steps share is in gelu.cuh.
#pragma once

#include "steps.h"

namespace kl {

// A step: out = gelu_tanh(x) over n > 0 elements; returns kOk, a kErr* code or a cudaError_t.
using GeluStep = int (*)(const void* x, void* out, int64_t n, DType dtype, cudaStream_t stream);
KL_STEP_TABLE(gelu, GeluStep);

// The size every step takes, then the step: kOk for no elements, kErrBadSize for a negative size.
inline int gelu_launch(GeluStep step, const void* x, void* out, int64_t n, DType dtype, cudaStream_t stream) {
  if (n < 0) return kErrBadSize;
  if (n == 0) return kOk;
  return step(x, out, n, dtype, stream);
}

}  // namespace kl

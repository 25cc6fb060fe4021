// The gelu family's CUDA steps: what each step's launcher takes, their table (steps.h), and the
// checks every launch shares.
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

// The vector_add family's CUDA steps: what each step's launcher takes, their table (steps.h), and
// the checks every launch shares.
#pragma once

#include "steps.h"

namespace kl {

// A step: out = a + b over n > 0 elements; returns kOk, a kErr* code or a cudaError_t.
using VectorAddStep = int (*)(const void* a, const void* b, void* out, int64_t n, DType dtype, cudaStream_t stream);
KL_STEP_TABLE(vector_add, VectorAddStep);

// The size every step takes, then the step: kOk for no elements, kErrBadSize for a negative size.
inline int vector_add_launch(VectorAddStep step, const void* a, const void* b, void* out, int64_t n, DType dtype,
                             cudaStream_t stream) {
  if (n < 0) return kErrBadSize;
  if (n == 0) return kOk;
  return step(a, b, out, n, dtype, stream);
}

}  // namespace kl

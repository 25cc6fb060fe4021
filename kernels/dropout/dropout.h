// The dropout family's CUDA steps: what each step's launcher takes, their table (steps.h), and the
// checks every launch shares.
#pragma once

#include "steps.h"

namespace kl {

// A step: out = keep ? x / (1 - p) : 0, keep = uniform(seed, index) >= p, over n > 0 elements;
// returns kOk, a kErr* code or a cudaError_t.
using DropoutStep = int (*)(const void* x, void* out, int64_t n, uint64_t seed, float p, DType dtype,
                            cudaStream_t stream);
KL_STEP_TABLE(dropout, DropoutStep);

// The size every step takes, then the step: kOk for no elements, kErrBadSize for a negative size.
inline int dropout_launch(DropoutStep step, const void* x, void* out, int64_t n, uint64_t seed, float p, DType dtype,
                          cudaStream_t stream) {
  if (n < 0) return kErrBadSize;
  if (n == 0) return kOk;
  return step(x, out, n, seed, p, dtype, stream);
}

}  // namespace kl

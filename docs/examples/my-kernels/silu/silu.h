// The silu family's CUDA steps: what each step's launcher takes, and their table (steps.h).
#pragma once

#include "steps.h"

namespace kl {

// A step: out = x * sigmoid(x) over n > 0 elements; returns kOk, a kErr* code or a cudaError_t.
using SiluStep = int (*)(const void* x, void* out, int64_t n, DType dtype, cudaStream_t stream);
KL_STEP_TABLE(silu, SiluStep);

}  // namespace kl

// The reduction family's CUDA steps: what each step's launcher takes, their table (steps.h), and
// the checks every launch shares.
#pragma once

#include "steps.h"

namespace kl {

// Device memory a step asks for only when it needs it (the atomic step's fp64 accumulator):
// fp64(owner) returns one double of device memory (the binding's, from PyTorch's caching
// allocator: no cudaMalloc per call), or nullptr.
struct ReduceSumScratch {
  double* (*fp64)(void* owner);
  void* owner;
};

// A step: *out (one fp32, zeroed before the step runs) = sum of n > 0 elements of x; returns kOk,
// a kErr* code or a cudaError_t.
using ReduceSumStep = int (*)(const void* x, float* out, const ReduceSumScratch& scratch, int64_t n, DType dtype,
                              cudaStream_t stream);
KL_STEP_TABLE(reduction, ReduceSumStep);

// The dtype and size every step takes, then *out = 0, then the step (kOk for no elements).
int reduce_sum_launch(ReduceSumStep step, const void* x, float* out, const ReduceSumScratch& scratch, int64_t n,
                      DType dtype, cudaStream_t stream);

}  // namespace kl

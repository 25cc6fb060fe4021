// Sum reductions, accumulated in fp32 (bf16 inputs convert on load): the reduction family's CUDA
// steps: what each step's launcher takes, their table (steps.h), and the checks every launch
// shares. Each step is a file of cuda_reduction/ that registers itself in the table; what the
// steps share is in reduction.cuh.
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
inline int reduce_sum_launch(ReduceSumStep step, const void* x, float* out, const ReduceSumScratch& scratch,
                             int64_t n, DType dtype, cudaStream_t stream) {
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return kErrUnsupportedDtype;
  if (n < 0) return kErrBadSize;
  const cudaError_t zero = cudaMemsetAsync(out, 0, sizeof(float), stream);
  if (zero != cudaSuccess) return static_cast<int>(zero);
  if (n == 0) return kOk;
  return step(x, out, scratch, n, dtype, stream);
}

}  // namespace kl

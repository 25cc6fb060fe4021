// The reduction family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum ReduceSumVariant : int {
  kReduceSumAtomic = 0,
  kReduceSumSmemTree = 1,
  kReduceSumWarpShuffle = 2,
  kReduceSumVec4 = 3
};
inline constexpr const char* kReduceSumVariants[] = {"atomic", "smem_tree", "warp_shuffle", "vec4"};
static_assert(count_of(kReduceSumVariants) == kReduceSumVec4 + 1, "reduce_sum variant names and ids disagree");

// *out (one fp32) = sum of n elements of x; the launcher zeroes *out first. `scratch` is one
// double of device memory for the atomic variant's fp64 accumulator (the others ignore it).
int reduce_sum_launch(const void* x, float* out, double* scratch, int64_t n, DType dtype, int variant,
                      cudaStream_t stream);

}  // namespace kl

// The dropout family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum DropoutVariant : int { kDropoutPhilox = 0 };
inline constexpr const char* kDropoutVariants[] = {"philox"};

// out = keep ? x / (1 - p) : 0, keep = philox_uniform(seed, index) >= p.
int dropout_launch(const void* x, void* out, int64_t n, uint64_t seed, float p, DType dtype, int variant,
                   cudaStream_t stream);

}  // namespace kl

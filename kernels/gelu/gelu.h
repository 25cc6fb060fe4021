// The gelu family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum GeluVariant : int { kGeluCourse = 0, kGeluVec4 = 1, kGeluVec4Ilp = 2 };
inline constexpr const char* kGeluVariants[] = {"course", "vec4", "vec4_ilp"};
static_assert(count_of(kGeluVariants) == kGeluVec4Ilp + 1, "gelu variant names and ids disagree");

// out = gelu_tanh(x) over n elements.
int gelu_launch(const void* x, void* out, int64_t n, DType dtype, int variant, cudaStream_t stream);

}  // namespace kl

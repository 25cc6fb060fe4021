// The vector_add family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum VectorAddVariant : int { kVectorAddVec4 = 0 };
inline constexpr const char* kVectorAddVariants[] = {"vec4"};

// ---- launchers ---------------------------------------------------------------------------
// out = a + b over n elements.
int vector_add_launch(const void* a, const void* b, void* out, int64_t n, DType dtype, int variant,
                      cudaStream_t stream);

}  // namespace kl

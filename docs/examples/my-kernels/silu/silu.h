// The silu family's launcher and variant names, shared by silu.cu and binding.cpp.
#pragma once

#include "kernellab.h"

namespace kl {

enum SiluVariant : int { kSiluScalar = 0, kSiluVec4 = 1 };
inline constexpr const char* kSiluVariants[] = {"scalar", "vec4"};

// out = x * sigmoid(x) over n elements.
int silu_launch(const void* x, void* out, int64_t n, DType dtype, int variant, cudaStream_t stream);

}  // namespace kl

// The softmax family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum SoftmaxVariant : int { kSoftmaxBlock = 0, kSoftmaxCluster = 1, kSoftmaxStaged = 2 };
inline constexpr const char* kSoftmaxVariants[] = {"block", "cluster", "staged"};

// Row-wise softmax of a (rows, cols) row-major matrix.
int softmax_launch(const void* x, void* out, int64_t rows, int64_t cols, DType dtype, int variant,
                   cudaStream_t stream);

}  // namespace kl

// The row_sum family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum RowSumVariant : int { kRowSumWarp = 0, kRowSumCluster = 1 };
inline constexpr const char* kRowSumVariants[] = {"warp", "cluster"};

// out[r] (fp32) = sum of row r of the (rows, cols) matrix x.
int row_sum_launch(const void* x, float* out, int64_t rows, int64_t cols, DType dtype, int variant,
                   cudaStream_t stream);

}  // namespace kl

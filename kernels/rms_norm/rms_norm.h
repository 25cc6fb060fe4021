// The rms_norm family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum RmsNormVariant : int {
  kRmsNormBlock = 0,
  kRmsNormCluster = 1,
  kRmsNormStaged = 2,
  kRmsNormPrefetch = 3,
  kRmsNormResident = 4,
  kRmsNormResident3 = 5
};
inline constexpr const char* kRmsNormVariants[] = {"block", "cluster", "staged", "prefetch", "resident", "resident3"};

// out = x / sqrt(mean(x^2) + eps) * w, per row of (rows, cols); w has cols elements.
int rms_norm_launch(const void* x, const void* w, void* out, int64_t rows, int64_t cols, float eps,
                    DType dtype, int variant, cudaStream_t stream);

}  // namespace kl

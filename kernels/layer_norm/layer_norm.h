// The layer_norm family's launcher and variant names: the interface between its plain-CUDA
// source and its binding (binding.cpp beside it).
#pragma once

#include "kernellab.h"

namespace kl {

enum LayerNormVariant : int {
  kLayerNormBlock = 0,
  kLayerNormCluster = 1,
  kLayerNormStaged = 2,
  kLayerNormPrefetch = 3,
  kLayerNormResident = 4,
  kLayerNormResident3 = 5,
  kLayerNormOnePass = 6,
  kLayerNormOnePassResident = 7,
  kLayerNormLean = 8
};
inline constexpr const char* kLayerNormVariants[] = {"block", "cluster", "staged", "prefetch", "resident", "resident3",
                                                       "onepass", "onepass_resident", "lean"};

// out = (x - mean) / sqrt(var + eps) * w + b, per row of (rows, cols); w, b have cols elements.
int layer_norm_launch(const void* x, const void* w, const void* b, void* out, int64_t rows, int64_t cols,
                      float eps, DType dtype, int variant, cudaStream_t stream);

}  // namespace kl

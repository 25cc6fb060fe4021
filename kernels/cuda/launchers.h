// Host launchers of the kernellab CUDA kernels: the only interface between the plain CUDA
// files (kernels/cuda/*.cu, no torch headers) and the binding layer (bindings.cpp).
//
// Every launcher takes raw device pointers, sizes, a dtype tag, a variant index and the
// stream to launch on, and returns a status: kOk (0), one of the negative kl::kErr* codes
// below, or a positive cudaError_t value from the launch.
//
// A variant is the index of its name in the family's k*Variants array; the enum next to
// each array names the same indices for the .cu side.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace kl {

enum class DType : int { kFloat32 = 0, kBFloat16 = 1 };

constexpr int kOk = 0;
constexpr int kErrUnknownVariant = -1;
constexpr int kErrUnsupportedDtype = -2;
constexpr int kErrBadSize = -3;  // a size the kernel cannot index (too large, negative)
constexpr int kErrNoScratch = -4;  // a variant that needs scratch memory was given none

template <typename T, std::size_t N>
constexpr int count_of(const T (&)[N]) {
  return static_cast<int>(N);
}

// ---- variant names (index = variant id) --------------------------------------------------
enum VectorAddVariant : int { kVectorAddVec4 = 0 };
inline constexpr const char* kVectorAddVariants[] = {"vec4"};

enum GeluVariant : int { kGeluCourse = 0, kGeluVec4 = 1, kGeluVec4Ilp = 2 };
inline constexpr const char* kGeluVariants[] = {"course", "vec4", "vec4_ilp"};

enum SoftmaxVariant : int { kSoftmaxBlock = 0 };
inline constexpr const char* kSoftmaxVariants[] = {"block"};

enum LayerNormVariant : int { kLayerNormBlock = 0 };
inline constexpr const char* kLayerNormVariants[] = {"block"};

enum RmsNormVariant : int { kRmsNormBlock = 0 };
inline constexpr const char* kRmsNormVariants[] = {"block"};

enum DropoutVariant : int { kDropoutPhilox = 0 };
inline constexpr const char* kDropoutVariants[] = {"philox"};

enum ReduceSumVariant : int {
  kReduceSumAtomic = 0,
  kReduceSumSmemTree = 1,
  kReduceSumWarpShuffle = 2,
  kReduceSumVec4 = 3
};
inline constexpr const char* kReduceSumVariants[] = {"atomic", "smem_tree", "warp_shuffle", "vec4"};

enum RowSumVariant : int { kRowSumWarp = 0 };
inline constexpr const char* kRowSumVariants[] = {"warp"};

enum SgemmVariant : int {
  kSgemmNaive = 0,
  kSgemmCoalesced = 1,
  kSgemmSmemTiling = 2,
  kSgemmBlocktile1d = 3,
  kSgemmBlocktile2d = 4,
  kSgemmVectorized = 5,
  kSgemmWarptile = 6,
  kSgemmAutotuned = 7
};
inline constexpr const char* kSgemmVariants[] = {"naive",        "coalesced",  "smem_tiling", "blocktile_1d",
                                                 "blocktile_2d", "vectorized", "warptile",    "autotuned"};
// Tile shapes of the "autotuned" variant (index = config id; the binding takes "autotuned:<id>"):
// BMxBNxBK, warp tile, threads per block, cp.async stages.
inline constexpr const char* kSgemmAutotunedConfigs[] = {
    "128x128x8_w64x64_t128_s4",  "128x128x16_w64x64_t128_s3", "128x256x8_w64x64_t256_s3",
    "256x128x8_w64x64_t256_s3",  "128x128x16_w64x32_t256_s3", "128x64x16_w64x32_t128_s3",
    "64x128x16_w32x64_t128_s3",  "64x64x16_w32x32_t128_s3"};

static_assert(count_of(kGeluVariants) == kGeluVec4Ilp + 1, "gelu variant names and ids disagree");
static_assert(count_of(kReduceSumVariants) == kReduceSumVec4 + 1, "reduce_sum variant names and ids disagree");
static_assert(count_of(kSgemmVariants) == kSgemmAutotuned + 1, "sgemm variant names and ids disagree");

// ---- launchers ---------------------------------------------------------------------------
// out = a + b over n elements.
int vector_add_launch(const void* a, const void* b, void* out, int64_t n, DType dtype, int variant,
                      cudaStream_t stream);

// out = gelu_tanh(x) over n elements.
int gelu_launch(const void* x, void* out, int64_t n, DType dtype, int variant, cudaStream_t stream);

// Row-wise softmax of a (rows, cols) row-major matrix.
int softmax_launch(const void* x, void* out, int64_t rows, int64_t cols, DType dtype, int variant,
                   cudaStream_t stream);

// out = (x - mean) / sqrt(var + eps) * w + b, per row of (rows, cols); w, b have cols elements.
int layer_norm_launch(const void* x, const void* w, const void* b, void* out, int64_t rows, int64_t cols,
                      float eps, DType dtype, int variant, cudaStream_t stream);

// out = x / sqrt(mean(x^2) + eps) * w, per row of (rows, cols); w has cols elements.
int rms_norm_launch(const void* x, const void* w, void* out, int64_t rows, int64_t cols, float eps,
                    DType dtype, int variant, cudaStream_t stream);

// out = keep ? x / (1 - p) : 0, keep = philox_uniform(seed, index) >= p.
int dropout_launch(const void* x, void* out, int64_t n, uint64_t seed, float p, DType dtype, int variant,
                   cudaStream_t stream);

// *out (one fp32) = sum of n elements of x; the launcher zeroes *out first. `scratch` is one
// double of device memory for the atomic variant's fp64 accumulator (the others ignore it).
int reduce_sum_launch(const void* x, float* out, double* scratch, int64_t n, DType dtype, int variant,
                      cudaStream_t stream);

// out[r] (fp32) = sum of row r of the (rows, cols) matrix x.
int row_sum_launch(const void* x, float* out, int64_t rows, int64_t cols, DType dtype, int variant,
                   cudaStream_t stream);

// c (M, N) = a (M, K) @ b (K, N), fp32, all row-major. `config` picks the tile shape of
// kSgemmAutotuned (an index into kSgemmAutotunedConfigs; -1: the launcher's default for the
// shape) and must be -1 for every other variant.
int sgemm_launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int variant,
                 int config, cudaStream_t stream);

}  // namespace kl

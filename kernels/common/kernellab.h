// What every family's plain-CUDA launcher shares with its binding: the dtype tag and the status
// codes. A family's header (kernels/<family>/<family>.h) declares its launcher, which takes raw
// device pointers, sizes, a dtype tag, a variant index and the stream, and returns kOk (0), one
// of the negative kl::kErr* codes below, or a positive cudaError_t value from the launch.
//
// A variant is the index of its name in the family's k*Variants array; the enum next to the
// array names the same indices for the .cu side.
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

}  // namespace kl

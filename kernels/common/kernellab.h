// What every family's plain-CUDA launcher shares with its binding: the dtype tag and the status
// codes. A family's header (kernels/<family>/<family>.h) declares the launcher type of its steps,
// which take raw device pointers, sizes, a dtype tag and the stream, and return kOk (0), one of
// the negative kl::kErr* codes below, or a positive cudaError_t value from the launch. The binding
// finds a step's launcher by the step's name in the family's step table (steps.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace kl {

enum class DType : int { kFloat32 = 0, kBFloat16 = 1 };

constexpr int kOk = 0;
constexpr int kErrUnknownConfig = -1;  // a config index a step does not have
constexpr int kErrUnsupportedDtype = -2;
constexpr int kErrBadSize = -3;  // a size the kernel cannot index (too large, negative)
constexpr int kErrNoScratch = -4;  // a step that needs scratch memory was given none

template <typename T, std::size_t N>
constexpr int count_of(const T (&)[N]) {
  return static_cast<int>(N);
}

}  // namespace kl

// What every family's binding shares: the tensor checks (one helper for all ops), the step
// lookup, launcher status -> error, and the current stream. A family's binding.cpp defines its
// ops with TORCH_LIBRARY_FRAGMENT(kernellab, m), so each family registers itself and setup.py
// only collects the files.
//
// Load the library with torch.ops.load_library(path); call torch.ops.kernellab.<op>(..., step).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>  // at::cuda::getCurrentCUDAStream is this c10 function
#include <torch/library.h>

#include "kernellab.h"
#include "steps.h"

namespace kl::binding {


struct Arg {
  const char* name;
  const at::Tensor& tensor;
};

// Numbers in error messages are formatted with std::to_string, never streamed: on the H200
// (torch 2.11, CUDA 13.0) an error message that streamed an IntArrayRef or a double through
// c10::str crashed the process (SIGSEGV) instead of raising. "[2, 3]" for sizes and strides.
inline std::string dims(c10::IntArrayRef values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

inline std::string dtype_list(std::initializer_list<at::ScalarType> dtypes) {
  std::string out;
  for (at::ScalarType t : dtypes) {
    if (!out.empty()) out += ", ";
    out += c10::toString(t);
  }
  return out;
}

// The checks every op shares: each tensor is defined, on a CUDA device (the same one as the
// first), contiguous; the first (or, with same_dtype, every) tensor has a supported dtype, and
// with same_dtype / same_shape all tensors match the first one's dtype / shape.
inline void check_args(const char* op, std::initializer_list<Arg> args, std::initializer_list<at::ScalarType> dtypes,
                bool same_dtype, bool same_shape) {
  const Arg& first = *args.begin();
  for (const Arg& a : args) {
    const at::Tensor& t = a.tensor;
    TORCH_CHECK(t.defined(), "kernellab.", op, ": ", a.name, " is an undefined tensor");
    TORCH_CHECK(t.is_cuda(), "kernellab.", op, ": ", a.name, " must be a CUDA tensor, got one on ", t.device());
    TORCH_CHECK(t.device() == first.tensor.device(), "kernellab.", op, ": ", a.name, " is on ", t.device(),
                " but ", first.name, " is on ", first.tensor.device());
    TORCH_CHECK(t.is_contiguous(), "kernellab.", op, ": ", a.name, " must be contiguous (shape ", dims(t.sizes()),
                ", strides ", dims(t.strides()), ")");
    if (same_dtype || &a == &first) {
      bool supported = false;
      for (at::ScalarType d : dtypes) supported = supported || t.scalar_type() == d;
      TORCH_CHECK(supported, "kernellab.", op, ": ", a.name, " has dtype ", t.scalar_type(),
                  "; supported: ", dtype_list(dtypes));
    }
    if (same_dtype) {
      TORCH_CHECK(t.scalar_type() == first.tensor.scalar_type(), "kernellab.", op, ": ", a.name, " has dtype ",
                  t.scalar_type(), " but ", first.name, " has ", first.tensor.scalar_type());
    }
    if (same_shape) {
      TORCH_CHECK(t.sizes() == first.tensor.sizes(), "kernellab.", op, ": ", a.name, " has shape ", dims(t.sizes()),
                  " but ", first.name, " has ", dims(first.tensor.sizes()));
    }
  }
}

inline constexpr std::initializer_list<at::ScalarType> kFloatTypes = {at::kFloat, at::kBFloat16};

inline kl::DType dtype_tag(const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 ? kl::DType::kBFloat16 : kl::DType::kFloat32;
}

// The launcher of `step` in a family's step table (steps.h), or an error naming the known steps.
template <typename Launch>
Launch find_step(const char* op, const kl::StepTable<Launch>& steps, c10::string_view step) {
  const auto found = steps.find(std::string(step.data(), step.size()));
  if (found != steps.end()) return found->second;
  std::string known;
  for (const auto& entry : steps) known += (known.empty() ? "" : ", ") + entry.first;
  TORCH_CHECK(false, "kernellab.", op, ": unknown step '", std::string(step.data(), step.size()),
              "'; known steps: ", known);
  return nullptr;
}

// Turn a launcher's status into an error naming the op and step.
inline void check_status(const char* op, c10::string_view step, int status) {
  if (status == kl::kOk) return;
  const std::string v(step.data(), step.size());
  TORCH_CHECK(status != kl::kErrUnknownConfig, "kernellab.", op, " (", v, "): the step has no such config");
  TORCH_CHECK(status != kl::kErrUnsupportedDtype, "kernellab.", op, " (", v, "): unsupported dtype");
  TORCH_CHECK(status != kl::kErrBadSize, "kernellab.", op, " (", v,
              "): a size is out of the range the kernel can index");
  TORCH_CHECK(status != kl::kErrNoScratch, "kernellab.", op, " (", v, "): the step needs scratch memory");
  TORCH_CHECK(false, "kernellab.", op, " (", v, "): CUDA error ", std::to_string(status), ": ",
              cudaGetErrorString(static_cast<cudaError_t>(status)));
}

// The current stream of the tensor's device (ATen/cuda/CUDAContext.h would also pull in the
// cuBLAS and cuSPARSE headers for nothing).
inline cudaStream_t stream_of(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

// rows x cols view of a tensor whose last dimension is the reduced / normalized one.
inline void rows_cols(const char* op, const at::Tensor& x, int64_t& rows, int64_t& cols) {
  TORCH_CHECK(x.dim() >= 1, "kernellab.", op, ": x must have at least one dimension, got a scalar");
  cols = x.size(-1);
  rows = cols == 0 ? 0 : x.numel() / cols;
}

}  // namespace kl::binding

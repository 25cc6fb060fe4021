// Binding layer of the kernellab CUDA extension: registers the ops in the `kernellab` torch
// library, checks the tensors (one shared helper), sets the device guard, takes the current
// stream and calls the plain-CUDA launchers declared in launchers.h.
//
// Load with torch.ops.load_library(path); call as torch.ops.kernellab.<op>(..., variant).
#include <cstdint>
#include <initializer_list>
#include <string>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>  // at::cuda::getCurrentCUDAStream is this c10 function
#include <torch/library.h>

#include "launchers.h"

namespace {

struct Arg {
  const char* name;
  const at::Tensor& tensor;
};

// Numbers in error messages are formatted with std::to_string, never streamed: on the H200
// (torch 2.11, CUDA 13.0) an error message that streamed an IntArrayRef or a double through
// c10::str crashed the process (SIGSEGV) instead of raising. "[2, 3]" for sizes and strides.
std::string dims(c10::IntArrayRef values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

std::string dtype_list(std::initializer_list<at::ScalarType> dtypes) {
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
void check_args(const char* op, std::initializer_list<Arg> args, std::initializer_list<at::ScalarType> dtypes,
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

constexpr std::initializer_list<at::ScalarType> kFloatTypes = {at::kFloat, at::kBFloat16};

kl::DType dtype_tag(const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 ? kl::DType::kBFloat16 : kl::DType::kFloat32;
}

// Index of `variant` in the family's name list, or an error that lists the known names.
template <std::size_t N>
int variant_index(const char* op, c10::string_view variant, const char* const (&names)[N]) {
  std::string known;
  for (std::size_t i = 0; i < N; ++i) {
    if (variant == c10::string_view(names[i])) return static_cast<int>(i);
    if (i) known += ", ";
    known += names[i];
  }
  TORCH_CHECK(false, "kernellab.", op, ": unknown variant '", std::string(variant.data(), variant.size()),
              "'; known variants: ", known);
  return -1;
}

// "autotuned:<config>" -> the config index (<config>: an index or a name of
// kl::kSgemmAutotunedConfigs), with `variant` cut to "autotuned"; -1 (variant unchanged) without ':'.
int sgemm_config(c10::string_view& variant) {
  const auto colon = variant.find(':');
  if (colon == c10::string_view::npos) return -1;
  const c10::string_view name = variant.substr(0, colon), config = variant.substr(colon + 1);
  const std::string full(variant.data(), variant.size());
  TORCH_CHECK(name == c10::string_view(kl::kSgemmVariants[kl::kSgemmAutotuned]), "kernellab.sgemm: variant '",
              full, "': only 'autotuned' takes a config ('autotuned:<index or name>')");
  constexpr int n = kl::count_of(kl::kSgemmAutotunedConfigs);
  std::string known;
  for (int i = 0; i < n; ++i) {
    if (config == c10::string_view(kl::kSgemmAutotunedConfigs[i]) || config == c10::string_view(std::to_string(i))) {
      variant = name;
      return i;
    }
    known += (i ? ", " : "") + std::to_string(i) + " " + kl::kSgemmAutotunedConfigs[i];
  }
  TORCH_CHECK(false, "kernellab.sgemm: unknown config in '", full, "'; known configs: ", known);
  return -1;
}

// Turn a launcher's status into an error naming the op and variant.
void check_status(const char* op, c10::string_view variant, int status) {
  if (status == kl::kOk) return;
  const std::string v(variant.data(), variant.size());
  TORCH_CHECK(status != kl::kErrUnknownVariant, "kernellab.", op, ": the launcher has no variant '", v, "'");
  TORCH_CHECK(status != kl::kErrUnsupportedDtype, "kernellab.", op, " (", v, "): unsupported dtype");
  TORCH_CHECK(status != kl::kErrBadSize, "kernellab.", op, " (", v,
              "): a size is out of the range the kernel can index");
  TORCH_CHECK(status != kl::kErrNoScratch, "kernellab.", op, " (", v, "): the variant needs scratch memory");
  TORCH_CHECK(false, "kernellab.", op, " (", v, "): CUDA error ", std::to_string(status), ": ",
              cudaGetErrorString(static_cast<cudaError_t>(status)));
}

// The current stream of the tensor's device (ATen/cuda/CUDAContext.h would also pull in the
// cuBLAS and cuSPARSE headers for nothing).
cudaStream_t stream_of(const at::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

// rows x cols view of a tensor whose last dimension is the reduced / normalized one.
void rows_cols(const char* op, const at::Tensor& x, int64_t& rows, int64_t& cols) {
  TORCH_CHECK(x.dim() >= 1, "kernellab.", op, ": x must have at least one dimension, got a scalar");
  cols = x.size(-1);
  rows = cols == 0 ? 0 : x.numel() / cols;
}

// ---- ops ----------------------------------------------------------------------------------------

void vector_add(const at::Tensor& a, const at::Tensor& b, at::Tensor& out, c10::string_view variant) {
  const char* op = "vector_add";
  check_args(op, {{"a", a}, {"b", b}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kVectorAddVariants);
  const c10::cuda::CUDAGuard guard(a.device());
  check_status(op, variant,
               kl::vector_add_launch(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), dtype_tag(a), v,
                                     stream_of(a)));
}

void gelu(const at::Tensor& x, at::Tensor& out, c10::string_view variant) {
  const char* op = "gelu";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kGeluVariants);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant,
               kl::gelu_launch(x.data_ptr(), out.data_ptr(), x.numel(), dtype_tag(x), v, stream_of(x)));
}

void softmax(const at::Tensor& x, at::Tensor& out, c10::string_view variant) {
  const char* op = "softmax";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kSoftmaxVariants);
  int64_t rows = 0, cols = 0;
  rows_cols(op, x, rows, cols);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant,
               kl::softmax_launch(x.data_ptr(), out.data_ptr(), rows, cols, dtype_tag(x), v, stream_of(x)));
}

void layer_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out, double eps,
                c10::string_view variant) {
  const char* op = "layer_norm";
  check_args(op, {{"x", x}, {"w", w}, {"b", b}, {"out", out}}, kFloatTypes, true, false);
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  check_args(op, {{"w", w}, {"b", b}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kLayerNormVariants);
  int64_t rows = 0, cols = 0;
  rows_cols(op, x, rows, cols);
  TORCH_CHECK(w.dim() == 1 && w.size(0) == cols, "kernellab.", op, ": w must have shape (", std::to_string(cols), ",), got ",
              dims(w.sizes()));
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant,
               kl::layer_norm_launch(x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), rows, cols,
                                     static_cast<float>(eps), dtype_tag(x), v, stream_of(x)));
}

void rms_norm(const at::Tensor& x, const at::Tensor& w, at::Tensor& out, double eps, c10::string_view variant) {
  const char* op = "rms_norm";
  check_args(op, {{"x", x}, {"w", w}, {"out", out}}, kFloatTypes, true, false);
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kRmsNormVariants);
  int64_t rows = 0, cols = 0;
  rows_cols(op, x, rows, cols);
  TORCH_CHECK(w.dim() == 1 && w.size(0) == cols, "kernellab.", op, ": w must have shape (", std::to_string(cols), ",), got ",
              dims(w.sizes()));
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant,
               kl::rms_norm_launch(x.data_ptr(), w.data_ptr(), out.data_ptr(), rows, cols, static_cast<float>(eps),
                                   dtype_tag(x), v, stream_of(x)));
}

void dropout(const at::Tensor& x, int64_t seed, at::Tensor& out, double p, c10::string_view variant) {
  const char* op = "dropout";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kDropoutVariants);
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "kernellab.", op, ": p must be in [0, 1], got ", std::to_string(p));
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant,
               kl::dropout_launch(x.data_ptr(), out.data_ptr(), x.numel(), static_cast<uint64_t>(seed),
                                  static_cast<float>(p), dtype_tag(x), v, stream_of(x)));
}

void reduce_sum(const at::Tensor& x, at::Tensor& out, c10::string_view variant) {
  const char* op = "reduce_sum";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, false, false);
  TORCH_CHECK(out.scalar_type() == at::kFloat && out.numel() == 1, "kernellab.", op,
              ": out must be one fp32 element, got dtype ", out.scalar_type(), " shape ", dims(out.sizes()));
  const int v = variant_index(op, variant, kl::kReduceSumVariants);
  const c10::cuda::CUDAGuard guard(x.device());
  // the atomic step's fp64 accumulator (from PyTorch's caching allocator: no cudaMalloc per call)
  const at::Tensor scratch = v == kl::kReduceSumAtomic ? at::empty({1}, x.options().dtype(at::kDouble)) : at::Tensor();
  check_status(op, variant,
               kl::reduce_sum_launch(x.data_ptr(), out.data_ptr<float>(),
                                     scratch.defined() ? scratch.data_ptr<double>() : nullptr, x.numel(),
                                     dtype_tag(x), v, stream_of(x)));
}

void row_sum(const at::Tensor& x, at::Tensor& out, c10::string_view variant) {
  const char* op = "row_sum";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, false, false);
  TORCH_CHECK(x.dim() == 2, "kernellab.", op, ": x must be 2-D (rows, cols), got shape ", dims(x.sizes()));
  const int64_t rows = x.size(0), cols = x.size(1);
  TORCH_CHECK(out.scalar_type() == at::kFloat && out.dim() == 1 && out.size(0) == rows, "kernellab.", op,
              ": out must be fp32 of shape (", std::to_string(rows), ",), got dtype ", out.scalar_type(), " shape ", dims(out.sizes()));
  const int v = variant_index(op, variant, kl::kRowSumVariants);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant,
               kl::row_sum_launch(x.data_ptr(), out.data_ptr<float>(), rows, cols, dtype_tag(x), v, stream_of(x)));
}

void sgemm(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, c10::string_view variant) {
  const char* op = "sgemm";
  check_args(op, {{"a", a}, {"b", b}, {"c", c}}, {at::kFloat}, true, false);
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "kernellab.", op, ": a, b, c must be 2-D, got ",
              dims(a.sizes()), ", ", dims(b.sizes()), ", ", dims(c.sizes()));
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(b.size(0) == k, "kernellab.", op, ": a is ", dims(a.sizes()), " but b is ", dims(b.sizes()),
              " (inner sizes differ)");
  TORCH_CHECK(c.size(0) == m && c.size(1) == n, "kernellab.", op, ": c must have shape (", std::to_string(m), ", ", std::to_string(n), "), got ",
              dims(c.sizes()));
  c10::string_view name = variant;
  const int config = sgemm_config(name);  // "autotuned:<config>"
  const int v = variant_index(op, name, kl::kSgemmVariants);
  const c10::cuda::CUDAGuard guard(a.device());
  check_status(op, variant,
               kl::sgemm_launch(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), m, n, k, v, config,
                                stream_of(a)));
}

}  // namespace

TORCH_LIBRARY(kernellab, m) {
  m.def("vector_add(Tensor a, Tensor b, Tensor(a!) out, str variant) -> ()");
  m.def("gelu(Tensor x, Tensor(a!) out, str variant) -> ()");
  m.def("softmax(Tensor x, Tensor(a!) out, str variant) -> ()");
  m.def("layer_norm(Tensor x, Tensor w, Tensor b, Tensor(a!) out, float eps, str variant) -> ()");
  m.def("rms_norm(Tensor x, Tensor w, Tensor(a!) out, float eps, str variant) -> ()");
  m.def("dropout(Tensor x, int seed, Tensor(a!) out, float p, str variant) -> ()");
  m.def("reduce_sum(Tensor x, Tensor(a!) out, str variant) -> ()");
  m.def("row_sum(Tensor x, Tensor(a!) out, str variant) -> ()");
  m.def("sgemm(Tensor a, Tensor b, Tensor(a!) c, str variant) -> ()");
}

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) {
  m.impl("vector_add", &vector_add);
  m.impl("gelu", &gelu);
  m.impl("softmax", &softmax);
  m.impl("layer_norm", &layer_norm);
  m.impl("rms_norm", &rms_norm);
  m.impl("dropout", &dropout);
  m.impl("reduce_sum", &reduce_sum);
  m.impl("row_sum", &row_sum);
  m.impl("sgemm", &sgemm);
}

// The dropout family's torch ops: checks, device guard, current stream, then the plain-CUDA
// launcher of dropout.h.
#include "binding.h"
#include "dropout.h"

namespace {

using namespace kl::binding;

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

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("dropout(Tensor x, int seed, Tensor(a!) out, float p, str variant) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("dropout", &dropout); }

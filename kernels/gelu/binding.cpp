// The gelu family's torch ops: checks, device guard, current stream, then the plain-CUDA
// launcher of gelu.h.
#include "binding.h"
#include "gelu.h"

namespace {

using namespace kl::binding;

void gelu(const at::Tensor& x, at::Tensor& out, c10::string_view variant) {
  const char* op = "gelu";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kGeluVariants);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant,
               kl::gelu_launch(x.data_ptr(), out.data_ptr(), x.numel(), dtype_tag(x), v, stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("gelu(Tensor x, Tensor(a!) out, str variant) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("gelu", &gelu); }

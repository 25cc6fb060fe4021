// The silu family's torch op: checks, device guard, current stream, then silu.h's launcher.
#include "binding.h"
#include "silu.h"

namespace {

using namespace kl::binding;

void silu(const at::Tensor& x, at::Tensor& out, c10::string_view variant) {
  const char* op = "silu";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kSiluVariants);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, variant, kl::silu_launch(x.data_ptr(), out.data_ptr(), x.numel(), dtype_tag(x), v, stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("silu(Tensor x, Tensor(a!) out, str variant) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("silu", &silu); }

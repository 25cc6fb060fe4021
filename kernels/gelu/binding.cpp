// The gelu family's torch op: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (gelu.h).
#include "binding.h"
#include "gelu.h"

namespace {

using namespace kl::binding;

void gelu(const at::Tensor& x, at::Tensor& out, c10::string_view step) {
  const char* op = "gelu";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const kl::GeluStep launcher = find_step(op, kl::gelu_steps(), step);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, step,
               kl::gelu_launch(launcher, x.data_ptr(), out.data_ptr(), x.numel(), dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("gelu(Tensor x, Tensor(a!) out, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("gelu", &gelu); }

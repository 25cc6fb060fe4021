// The silu family's torch op: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (silu.h).
#include "binding.h"
#include "silu.h"

namespace {

using namespace kl::binding;

void silu(const at::Tensor& x, at::Tensor& out, c10::string_view step) {
  const char* op = "silu";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const kl::SiluStep launcher = find_step(op, kl::silu_steps(), step);
  if (x.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, step, launcher(x.data_ptr(), out.data_ptr(), x.numel(), dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("silu(Tensor x, Tensor(a!) out, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("silu", &silu); }

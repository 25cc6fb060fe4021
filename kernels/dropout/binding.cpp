// The dropout family's torch op: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (dropout.h).
#include "binding.h"
#include "dropout.h"

namespace {

using namespace kl::binding;

void dropout(const at::Tensor& x, int64_t seed, at::Tensor& out, double p, c10::string_view step) {
  const char* op = "dropout";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const kl::DropoutStep launcher = find_step(op, kl::dropout_steps(), step);
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "kernellab.", op, ": p must be in [0, 1], got ", std::to_string(p));
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, step,
               kl::dropout_launch(launcher, x.data_ptr(), out.data_ptr(), x.numel(), static_cast<uint64_t>(seed),
                                  static_cast<float>(p), dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("dropout(Tensor x, int seed, Tensor(a!) out, float p, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("dropout", &dropout); }

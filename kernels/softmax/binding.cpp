// The softmax family's torch op: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (softmax.h).
#include "binding.h"
#include "softmax.h"

namespace {

using namespace kl::binding;

void softmax(const at::Tensor& x, at::Tensor& out, c10::string_view step) {
  const char* op = "softmax";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const kl::SoftmaxStep launcher = find_step(op, kl::softmax_steps(), step);
  int64_t rows = 0, cols = 0;
  rows_cols(op, x, rows, cols);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, step,
               kl::softmax_launch(launcher, x.data_ptr(), out.data_ptr(), rows, cols, dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("softmax(Tensor x, Tensor(a!) out, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("softmax", &softmax); }

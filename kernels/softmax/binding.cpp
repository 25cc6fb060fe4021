// The softmax family's torch ops: checks, device guard, current stream, then the plain-CUDA
// launcher of softmax.h.
#include "binding.h"
#include "softmax.h"

namespace {

using namespace kl::binding;

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

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("softmax(Tensor x, Tensor(a!) out, str variant) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("softmax", &softmax); }

// The layer_norm family's torch ops: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (layer_norm.h).
#include "binding.h"
#include "layer_norm.h"

namespace {

using namespace kl::binding;

void layer_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::Tensor& out, double eps,
                c10::string_view step) {
  const char* op = "layer_norm";
  check_args(op, {{"x", x}, {"w", w}, {"b", b}, {"out", out}}, kFloatTypes, true, false);
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  check_args(op, {{"w", w}, {"b", b}}, kFloatTypes, true, true);
  const kl::LayerNormStep launcher = find_step(op, kl::layer_norm_steps(), step);
  int64_t rows = 0, cols = 0;
  rows_cols(op, x, rows, cols);
  TORCH_CHECK(w.dim() == 1 && w.size(0) == cols, "kernellab.", op, ": w must have shape (", std::to_string(cols), ",), got ",
              dims(w.sizes()));
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, step,
               kl::layer_norm_launch(launcher, x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), rows, cols,
                                     static_cast<float>(eps), dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("layer_norm(Tensor x, Tensor w, Tensor b, Tensor(a!) out, float eps, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("layer_norm", &layer_norm); }

// The row_sum family's torch op: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (row_sum.h).
#include "binding.h"
#include "row_sum.h"

namespace {

using namespace kl::binding;

void row_sum(const at::Tensor& x, at::Tensor& out, c10::string_view step) {
  const char* op = "row_sum";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, false, false);
  TORCH_CHECK(x.dim() == 2, "kernellab.", op, ": x must be 2-D (rows, cols), got shape ", dims(x.sizes()));
  const int64_t rows = x.size(0), cols = x.size(1);
  TORCH_CHECK(out.scalar_type() == at::kFloat && out.dim() == 1 && out.size(0) == rows, "kernellab.", op,
              ": out must be fp32 of shape (", std::to_string(rows), ",), got dtype ", out.scalar_type(), " shape ", dims(out.sizes()));
  const kl::RowSumStep launcher = find_step(op, kl::row_sum_steps(), step);
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, step,
               kl::row_sum_launch(launcher, x.data_ptr(), out.data_ptr<float>(), rows, cols, dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("row_sum(Tensor x, Tensor(a!) out, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("row_sum", &row_sum); }

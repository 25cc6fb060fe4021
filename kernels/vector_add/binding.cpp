// The vector_add family's torch op: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (vector_add.h).
#include "binding.h"
#include "vector_add.h"

namespace {

using namespace kl::binding;

void vector_add(const at::Tensor& a, const at::Tensor& b, at::Tensor& out, c10::string_view step) {
  const char* op = "vector_add";
  check_args(op, {{"a", a}, {"b", b}, {"out", out}}, kFloatTypes, true, true);
  const kl::VectorAddStep launcher = find_step(op, kl::vector_add_steps(), step);
  const c10::cuda::CUDAGuard guard(a.device());
  check_status(op, step,
               kl::vector_add_launch(launcher, a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), dtype_tag(a),
                                     stream_of(a)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("vector_add(Tensor a, Tensor b, Tensor(a!) out, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("vector_add", &vector_add); }

// The vector_add family's torch ops: checks, device guard, current stream, then the plain-CUDA
// launcher of vector_add.h.
#include "binding.h"
#include "vector_add.h"

namespace {

using namespace kl::binding;

void vector_add(const at::Tensor& a, const at::Tensor& b, at::Tensor& out, c10::string_view variant) {
  const char* op = "vector_add";
  check_args(op, {{"a", a}, {"b", b}, {"out", out}}, kFloatTypes, true, true);
  const int v = variant_index(op, variant, kl::kVectorAddVariants);
  const c10::cuda::CUDAGuard guard(a.device());
  check_status(op, variant,
               kl::vector_add_launch(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), dtype_tag(a), v,
                                     stream_of(a)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("vector_add(Tensor a, Tensor b, Tensor(a!) out, str variant) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("vector_add", &vector_add); }

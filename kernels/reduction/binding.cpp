// The reduction family's torch ops: checks, device guard, current stream, then the plain-CUDA
// launcher of reduction.h.
#include "binding.h"
#include "reduction.h"

namespace {

using namespace kl::binding;

void reduce_sum(const at::Tensor& x, at::Tensor& out, c10::string_view variant) {
  const char* op = "reduce_sum";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, false, false);
  TORCH_CHECK(out.scalar_type() == at::kFloat && out.numel() == 1, "kernellab.", op,
              ": out must be one fp32 element, got dtype ", out.scalar_type(), " shape ", dims(out.sizes()));
  const int v = variant_index(op, variant, kl::kReduceSumVariants);
  const c10::cuda::CUDAGuard guard(x.device());
  // the atomic step's fp64 accumulator (from PyTorch's caching allocator: no cudaMalloc per call)
  const at::Tensor scratch = v == kl::kReduceSumAtomic ? at::empty({1}, x.options().dtype(at::kDouble)) : at::Tensor();
  check_status(op, variant,
               kl::reduce_sum_launch(x.data_ptr(), out.data_ptr<float>(),
                                     scratch.defined() ? scratch.data_ptr<double>() : nullptr, x.numel(),
                                     dtype_tag(x), v, stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("reduce_sum(Tensor x, Tensor(a!) out, str variant) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("reduce_sum", &reduce_sum); }

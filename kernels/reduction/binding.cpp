// The reduction family's torch op: checks, device guard, current stream, then the step's launcher,
// looked up by name in the family's step table (reduction.h).
#include "binding.h"
#include "reduction.h"

namespace {

using namespace kl::binding;

// Scratch a step asks for (the atomic step's fp64 accumulator), allocated on its first request
// from PyTorch's caching allocator (no cudaMalloc per call); freed when the op returns.
struct Scratch {
  at::TensorOptions options;
  at::Tensor fp64;
};

double* fp64_scratch(void* owner) {
  Scratch& scratch = *static_cast<Scratch*>(owner);
  if (!scratch.fp64.defined()) scratch.fp64 = at::empty({1}, scratch.options.dtype(at::kDouble));
  return scratch.fp64.data_ptr<double>();
}

void reduce_sum(const at::Tensor& x, at::Tensor& out, c10::string_view step) {
  const char* op = "reduce_sum";
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, false, false);
  TORCH_CHECK(out.scalar_type() == at::kFloat && out.numel() == 1, "kernellab.", op,
              ": out must be one fp32 element, got dtype ", out.scalar_type(), " shape ", dims(out.sizes()));
  const kl::ReduceSumStep launcher = find_step(op, kl::reduction_steps(), step);
  const c10::cuda::CUDAGuard guard(x.device());
  Scratch scratch{x.options(), at::Tensor()};
  check_status(op, step,
               kl::reduce_sum_launch(launcher, x.data_ptr(), out.data_ptr<float>(), {fp64_scratch, &scratch},
                                     x.numel(), dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("reduce_sum(Tensor x, Tensor(a!) out, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("reduce_sum", &reduce_sum); }

// The rms_norm family's torch ops, forward and backward: checks, device guard, current stream, then
// the step's launcher, looked up by name in the pass's step table (rms_norm.h).
#include "binding.h"
#include "rms_norm.h"

namespace {

using namespace kl::binding;

void rms_norm(const at::Tensor& x, const at::Tensor& w, at::Tensor& out, double eps, c10::string_view step) {
  const char* op = "rms_norm";
  check_args(op, {{"x", x}, {"w", w}, {"out", out}}, kFloatTypes, true, false);
  check_args(op, {{"x", x}, {"out", out}}, kFloatTypes, true, true);
  const kl::RmsNormStep launcher = find_step(op, kl::rms_norm_steps(), step);
  int64_t rows = 0, cols = 0;
  rows_cols(op, x, rows, cols);
  TORCH_CHECK(w.dim() == 1 && w.size(0) == cols, "kernellab.", op, ": w must have shape (", std::to_string(cols), ",), got ",
              dims(w.sizes()));
  const c10::cuda::CUDAGuard guard(x.device());
  check_status(op, step,
               kl::rms_norm_launch(launcher, x.data_ptr(), w.data_ptr(), out.data_ptr(), rows, cols,
                                   static_cast<float>(eps), dtype_tag(x), stream_of(x)));
}

// fp32 scratch a backward step asks for (its dw accumulator or partial rows), from PyTorch's caching
// allocator (no cudaMalloc per call); freed when the op returns, after the work queued on its stream.
struct Scratch {
  at::TensorOptions options;
  at::Tensor fp32;
};

float* fp32_scratch(void* owner, int64_t n) {
  Scratch& scratch = *static_cast<Scratch*>(owner);
  scratch.fp32 = at::empty({n}, scratch.options.dtype(at::kFloat));
  return scratch.fp32.data_ptr<float>();
}

// The backward: dx and dw from x, w, dy and the forward's fp32 rstd of each row (the arguments in
// kit.cuda_backward_op's order: inputs, dy, saved state, gradients, step).
void rms_norm_bwd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy, const at::Tensor& rstd,
                  at::Tensor& dx, at::Tensor& dw, c10::string_view step) {
  const char* op = "rms_norm_bwd";
  check_args(op, {{"x", x}, {"dy", dy}, {"w", w}, {"dx", dx}, {"dw", dw}}, kFloatTypes, true, false);
  check_args(op, {{"x", x}, {"dy", dy}, {"dx", dx}}, kFloatTypes, true, true);
  check_args(op, {{"w", w}, {"dw", dw}}, kFloatTypes, true, true);
  check_args(op, {{"rstd", rstd}, {"x", x}}, {at::kFloat}, false, false);
  const kl::RmsNormBwdStep launcher = find_step(op, kl::rms_norm_bwd_steps(), step);
  int64_t rows = 0, cols = 0;
  rows_cols(op, x, rows, cols);
  TORCH_CHECK(w.dim() == 1 && w.size(0) == cols, "kernellab.", op, ": w must have shape (", std::to_string(cols),
              ",), got ", dims(w.sizes()));
  TORCH_CHECK(rstd.numel() == rows, "kernellab.", op, ": rstd must hold one value per row (", std::to_string(rows),
              "), got shape ", dims(rstd.sizes()));
  const c10::cuda::CUDAGuard guard(x.device());
  Scratch scratch{x.options(), at::Tensor()};
  check_status(op, step,
               kl::rms_norm_bwd_launch(launcher, x.data_ptr(), dy.data_ptr(), w.data_ptr(), rstd.data_ptr<float>(),
                                       dx.data_ptr(), dw.data_ptr(), {fp32_scratch, &scratch}, rows, cols,
                                       dtype_tag(x), stream_of(x)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) {
  m.def("rms_norm(Tensor x, Tensor w, Tensor(a!) out, float eps, str step) -> ()");
  m.def("rms_norm_bwd(Tensor x, Tensor w, Tensor dy, Tensor rstd, Tensor(a!) dx, Tensor(b!) dw, str step) -> ()");
}

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) {
  m.impl("rms_norm", &rms_norm);
  m.impl("rms_norm_bwd", &rms_norm_bwd);
}

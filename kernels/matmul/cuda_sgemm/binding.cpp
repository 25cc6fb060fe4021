// The matmul family's torch ops: checks, device guard, current stream, then the step's launcher,
// looked up by name in the step table (sgemm.h).
#include "binding.h"
#include "sgemm.h"

namespace {

using namespace kl::binding;

// "autotuned:<config>" -> the config index (<config>: an index or a name of
// kl::kSgemmAutotunedConfigs), with `step` cut to "autotuned"; -1 (step unchanged) without ':'.
int sgemm_config(c10::string_view& step) {
  const auto colon = step.find(':');
  if (colon == c10::string_view::npos) return -1;
  const c10::string_view name = step.substr(0, colon), config = step.substr(colon + 1);
  const std::string full(step.data(), step.size());
  TORCH_CHECK(name == c10::string_view("autotuned"), "kernellab.sgemm: step '",
              full, "': only 'autotuned' takes a config ('autotuned:<index or name>')");
  constexpr int n = kl::count_of(kl::kSgemmAutotunedConfigs);
  std::string known;
  for (int i = 0; i < n; ++i) {
    if (config == c10::string_view(kl::kSgemmAutotunedConfigs[i]) || config == c10::string_view(std::to_string(i))) {
      step = name;
      return i;
    }
    known += (i ? ", " : "") + std::to_string(i) + " " + kl::kSgemmAutotunedConfigs[i];
  }
  TORCH_CHECK(false, "kernellab.sgemm: unknown config in '", full, "'; known configs: ", known);
  return -1;
}

void sgemm(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, c10::string_view step) {
  const char* op = "sgemm";
  check_args(op, {{"a", a}, {"b", b}, {"c", c}}, {at::kFloat}, true, false);
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "kernellab.", op, ": a, b, c must be 2-D, got ",
              dims(a.sizes()), ", ", dims(b.sizes()), ", ", dims(c.sizes()));
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(b.size(0) == k, "kernellab.", op, ": a is ", dims(a.sizes()), " but b is ", dims(b.sizes()),
              " (inner sizes differ)");
  TORCH_CHECK(c.size(0) == m && c.size(1) == n, "kernellab.", op, ": c must have shape (", std::to_string(m), ", ", std::to_string(n), "), got ",
              dims(c.sizes()));
  c10::string_view name = step;
  const int config = sgemm_config(name);  // "autotuned:<config>"
  const kl::SgemmStep launcher = find_step(op, kl::sgemm_steps(), name);
  const c10::cuda::CUDAGuard guard(a.device());
  check_status(op, step,
               kl::sgemm_launch(launcher, a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), m, n, k, config,
                                stream_of(a)));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) { m.def("sgemm(Tensor a, Tensor b, Tensor(a!) c, str step) -> ()"); }

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("sgemm", &sgemm); }

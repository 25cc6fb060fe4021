// The Hopper GEMM ladder's torch ops: hgemm (checks, device guard, current stream, then the step's
// launcher from the step table of hgemm.h) and hgemm_tile (a step's block tile: what M, N, K must
// be multiples of, so that the family refuses other shapes before any GPU work).
#include <climits>
#include <vector>

#include "binding.h"
#include "hgemm.h"

namespace {

using namespace kl::binding;

// A step's launcher of element type T on the tensors' memory.
template <typename T>
int launch(kl::HgemmLaunch<T> fn, const at::Tensor& a, const at::Tensor& bt, at::Tensor& c, int64_t m, int64_t n,
           int64_t k) {
  return fn(reinterpret_cast<const T*>(a.data_ptr()), reinterpret_cast<const T*>(bt.data_ptr()),
            reinterpret_cast<T*>(c.data_ptr()), static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
            stream_of(a));
}

std::vector<int64_t> hgemm_tile(c10::string_view step) {
  const kl::HgemmStep info = find_step("hgemm", kl::hgemm_steps(), step);
  return {info->bm, info->bn, info->bk};
}

// c (M, N) = a (M, K) @ b (K, N): a and c row-major, b K-major (b.t() contiguous), all bf16 or all fp16.
void hgemm(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, c10::string_view step) {
  const char* op = "hgemm";
  const std::string name(step.data(), step.size());
  const kl::HgemmStep info = find_step(op, kl::hgemm_steps(), step);
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "kernellab.", op, ": a, b, c must be 2-D, got ",
              dims(a.sizes()), ", ", dims(b.sizes()), ", ", dims(c.sizes()));
  const at::Tensor bt = b.t();  // (N, K): what the kernels read, row-major
  check_args(op, {{"a", a}, {"b.t()", bt}, {"c", c}}, {at::kBFloat16, at::kHalf}, true, false);
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(b.size(0) == k, "kernellab.", op, ": a is ", dims(a.sizes()), " but b is ", dims(b.sizes()),
              " (inner sizes differ)");
  TORCH_CHECK(c.size(0) == m && c.size(1) == n, "kernellab.", op, ": c must have shape (", std::to_string(m), ", ",
              std::to_string(n), "), got ", dims(c.sizes()));
  TORCH_CHECK(m > 0 && n > 0 && k > 0 && m % info->bm == 0 && n % info->bn == 0 && k % info->bk == 0,
              "kernellab.", op, " (", name, "): M, N, K must be positive multiples of the ", std::to_string(info->bm),
              "x", std::to_string(info->bn), "x", std::to_string(info->bk), " tile, got M=", std::to_string(m),
              ", N=", std::to_string(n), ", K=", std::to_string(k));
  TORCH_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && n / info->bn <= INT_MAX && m / info->bm <= 65535,
              "kernellab.", op, " (", name, "): sizes out of the range the kernel can index");
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&a, &bt, &c})
    TORCH_CHECK(reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 == 0, "kernellab.", op,
                ": a, b, c must start at 16-byte aligned addresses");
  const c10::cuda::CUDAGuard guard(a.device());
  const int status = a.scalar_type() == at::kHalf ? launch(info->launch_fp16, a, bt, c, m, n, k)
                                                   : launch(info->launch_bf16, a, bt, c, m, n, k);
  TORCH_CHECK(status != kl::kErrNeedsSm90a, "kernellab.", op, " (", name,
              "): the library holds no sm_90a code for this step; rebuild with TORCH_CUDA_ARCH_LIST=9.0a");
  check_status(op, step, status);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(kernellab, m) {
  m.def("hgemm(Tensor a, Tensor b, Tensor(a!) c, str step) -> ()");
  m.def("hgemm_tile(str step) -> int[]", &hgemm_tile);  // no tensor: a catch-all kernel
}

TORCH_LIBRARY_IMPL(kernellab, CUDA, m) { m.impl("hgemm", &hgemm); }

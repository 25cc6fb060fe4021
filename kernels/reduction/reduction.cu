// Sum reductions, accumulated in fp32 (bf16 inputs convert on load): the family's step table and
// the checks every launch shares. Each step is a file of cuda_reduction/ that registers itself in
// the table; what the steps share is in reduction.cuh.
#include "reduction.h"

namespace kl {

KL_DEFINE_STEP_TABLE(reduction, ReduceSumStep)

int reduce_sum_launch(ReduceSumStep step, const void* x, float* out, const ReduceSumScratch& scratch, int64_t n,
                      DType dtype, cudaStream_t stream) {
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16) return kErrUnsupportedDtype;
  if (n < 0) return kErrBadSize;
  const cudaError_t zero = cudaMemsetAsync(out, 0, sizeof(float), stream);
  if (zero != cudaSuccess) return static_cast<int>(zero);
  if (n == 0) return kOk;
  return step(x, out, scratch, n, dtype, stream);
}

}  // namespace kl

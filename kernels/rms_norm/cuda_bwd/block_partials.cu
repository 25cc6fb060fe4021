// rms_norm backward step "block_partials": each block a group of kGroupRows consecutive rows, scalar
// accesses, its dw partial row in shared memory; a second kernel sums the partial rows
// (rms_norm_bwd.cuh).
#include "rms_norm_bwd.cuh"

namespace kl {
namespace {

constexpr int kGroupRows = 16;  // 4096 rows: 256 blocks, about two per SM; partials 1/16 of x's rows

template <typename T>
int block_partials_rows(const T* x, const T* dy, const T* w, const float* rstd, T* dx, T* dw,
                        const RmsNormBwdScratch& scratch, int64_t rows, int64_t cols, cudaStream_t stream) {
  return launch_bwd_partials<T, false>(x, dy, w, rstd, dx, dw, scratch, rows, cols, cdiv(rows, kGroupRows),
                                       row_block_threads(cols), kGroupRows, stream);
}

KL_RMS_NORM_BWD_STEP(block_partials, block_partials_rows(x, dy, w, rstd, dx, dw, scratch, rows, cols, stream))

}  // namespace

KL_STEP(rms_norm_bwd, block_partials);

}  // namespace kl

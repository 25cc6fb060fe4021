// rms_norm backward step "persistent": 16-byte vectors, as many blocks as fit on the device at once
// (at most one per kMinRows rows), each walking rows b, b + gridDim.x, ... with its dw partial row
// in shared memory; a second kernel sums the partial rows (rms_norm_bwd.cuh). Rows that cannot take
// vectors run the block_partials layout with scalars.
#include "rms_norm_bwd.cuh"

namespace kl {
namespace {

constexpr int64_t kMinRows = 16;  // rows per block at least: the partial rows stay 1/16 of x's

// One thread per 16-byte vector up to 512 threads: the vector kernel takes about 48 (fp32) and 63
// (bf16) registers a thread (ptxas, sm_90), so blocks of 512 let two share an SM.
inline int persistent_threads(int64_t units) {
  const int64_t t = (units + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : t > 512 ? 512 : t);
}

// Blocks of `kernel` one SM holds at once, with its shared-memory limit raised first (the
// occupancy query counts against the limit in force).
template <typename Kernel>
int resident_blocks(Kernel kernel, int threads, size_t smem, int& per_sm) {
  const int status = allow_smem(kernel, smem);
  if (status != kOk) return status;
  return static_cast<int>(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
}

template <typename T>
int persistent_rows(const T* x, const T* dy, const T* w, const float* rstd, T* dx, T* dw,
                    const RmsNormBwdScratch& scratch, int64_t rows, int64_t cols, cudaStream_t stream) {
  const bool vec = cols % Pack<T>::N == 0 && aligned16(x) && aligned16(dy) && aligned16(w) && aligned16(dx);
  if (!vec) {
    return launch_bwd_partials<T, false>(x, dy, w, rstd, dx, dw, scratch, rows, cols, cdiv(rows, kMinRows),
                                         row_block_threads(cols), static_cast<int>(kMinRows), stream);
  }
  const int threads = persistent_threads(cols / Pack<T>::N);
  const bool shared = row_fits_smem(cols);
  int per_sm = 0;
  const int occ = shared ? resident_blocks(rms_norm_bwd_rows<T, true, DwAcc::kShared>, threads,
                                           row_smem_bytes(cols, true), per_sm)
                         : resident_blocks(rms_norm_bwd_rows<T, true, DwAcc::kGlobal>, threads,
                                           row_smem_bytes(cols, false), per_sm);
  if (occ != kOk) return occ;
  int64_t blocks = static_cast<int64_t>(per_sm < 1 ? 1 : per_sm) * num_sms();
  if (blocks > cdiv(rows, kMinRows)) blocks = cdiv(rows, kMinRows);
  return launch_bwd_partials<T, true>(x, dy, w, rstd, dx, dw, scratch, rows, cols, blocks, threads, 0, stream);
}

KL_RMS_NORM_BWD_STEP(persistent, persistent_rows(x, dy, w, rstd, dx, dw, scratch, rows, cols, stream))

}  // namespace

KL_STEP(rms_norm_bwd, persistent);

}  // namespace kl

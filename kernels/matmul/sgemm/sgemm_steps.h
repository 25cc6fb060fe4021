// The host side of the SGEMM ladder's steps, one .cu file each (1_naive.cu ... 8_autotuned.cu):
// each launches its step's kernel on C (M, N) = A (M, K) @ B (K, N), fp32, row-major, M, N, K > 0
// (sgemm.cu's kl::sgemm_launch checks the arguments and dispatches on the variant). Each returns
// kOk, kErrBadSize (a grid too tall for the sizes), kErrUnknownVariant (an autotuned config
// out of range) or the launch's cudaError_t.
#pragma once

#include "kernellab.h"

namespace kl {

int run_sgemm_naive(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);
int run_sgemm_coalesced(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);
int run_sgemm_smem_tiling(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);
int run_sgemm_blocktile_1d(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);
int run_sgemm_blocktile_2d(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);
int run_sgemm_vectorized(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);
int run_sgemm_warptile(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);
// `config`: an index into kSgemmAutotunedConfigs (sgemm.h), or -1 for the launcher's own pick.
int run_sgemm_autotuned(const float* A, const float* B, float* C, int M, int N, int K, int config,
                        cudaStream_t stream);

}  // namespace kl

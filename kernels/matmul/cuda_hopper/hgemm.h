// 16-bit tensor-core GEMM on Hopper, C (M, N) = A (M, K) @ B (K, N): bf16 or fp16 in, fp32
// accumulation, the same type out. One file per step in this folder, each registering its step
// (tile shape and launchers) in the table below; their order is ladder.yaml's. hopper_common.cuh
// holds the PTX wrappers several steps share.
//
// Operands: A row-major (M, K); B K-major, i.e. its transpose Bt (N, K) row-major (what wgmma and
// ldmatrix read without a transpose: both operands have K contiguous); C row-major (M, N). The
// family's runner hands B over K-major (kmajor_copy, inside the timed call).
//
// No bounds checks: M and N must be multiples of the step's BM and BN, K of its BK (the binding
// refuses other shapes with a message naming the constraint; the Python runner turns it into an
// "unavailable" case before any GPU work), and A, Bt, C 16-byte aligned.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "steps.h"

namespace kl {

constexpr int kErrNeedsSm90a = -20;  // the library was built without sm_90a (TORCH_CUDA_ARCH_LIST=9.0a)

// A launch: the step's kernel on shapes its tile divides (the binding checked them).
template <typename T>
using HgemmLaunch = int (*)(const T* A, const T* Bt, T* C, int M, int N, int K, cudaStream_t stream);

// A step: its block tile (what M, N, K must be multiples of) and its launcher of each type.
struct HgemmStepInfo {
  int bm, bn, bk;
  HgemmLaunch<__nv_bfloat16> launch_bf16;
  HgemmLaunch<__half> launch_fp16;
};

using HgemmStep = const HgemmStepInfo*;
KL_STEP_TABLE(hgemm, HgemmStep);

}  // namespace kl

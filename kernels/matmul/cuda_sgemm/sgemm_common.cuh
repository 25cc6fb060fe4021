// Pieces shared by the steps of the SGEMM ladder (one .cu file each in this folder): the grid limit,
// the float4 contract and the guarded float4 loads and stores of the float4 kernels.
#pragma once

#include "common.cuh"

namespace kl {

// The largest gridDim.y: every step puts the tiles of one dimension of C there.
constexpr int64_t kSgemmMaxGridY = 65535;

// Every kernel checks bounds, so M, N, K need not be multiples of any tile. The float4 paths
// (VEC=true) need K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B, C; otherwise the launcher
// picks the VEC=false instantiation of the same kernel, which loads and stores scalars.
inline bool sgemm_float4_ok(const float* A, const float* B, const float* C, int N, int K) {
  return K % 4 == 0 && N % 4 == 0 && aligned16(A) && aligned16(B) && aligned16(C);
}

// Four consecutive floats p[0..3] where p[q] exists only while col + q < limit (row ok).
// VEC: one 16-byte load, valid as a whole (limit % 4 == 0 and col % 4 == 0).
template <bool VEC>
__device__ __forceinline__ float4 load4_guarded(const float* __restrict__ p, bool row_ok, int col, int limit) {
  if constexpr (VEC) {
    return (row_ok && col < limit) ? __ldg(reinterpret_cast<const float4*>(p)) : make_float4(0.f, 0.f, 0.f, 0.f);
  } else {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (row_ok) {
      if (col < limit) v.x = __ldg(p);
      if (col + 1 < limit) v.y = __ldg(p + 1);
      if (col + 2 < limit) v.z = __ldg(p + 2);
      if (col + 3 < limit) v.w = __ldg(p + 3);
    }
    return v;
  }
}

template <bool VEC>
__device__ __forceinline__ void store4_guarded(float* __restrict__ p, bool row_ok, int col, int limit,
                                               const float4& v) {
  if (!row_ok) return;
  if constexpr (VEC) {
    if (col < limit) *reinterpret_cast<float4*>(p) = v;
  } else {
    if (col < limit) p[0] = v.x;
    if (col + 1 < limit) p[1] = v.y;
    if (col + 2 < limit) p[2] = v.z;
    if (col + 3 < limit) p[3] = v.w;
  }
}

}  // namespace kl

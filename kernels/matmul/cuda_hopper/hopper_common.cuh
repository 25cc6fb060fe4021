// PTX wrappers the Hopper GEMM steps share: Ampere's cp.async / ldmatrix / mma.sync, Hopper's
// mbarrier, TMA (cp.async.bulk.tensor) and wgmma, the TMA descriptor made on the host, and a probe
// that tells the launcher whether the library holds sm_90a code. Operand constraints follow the
// PTX ISA (sections cited beside each wrapper). The sm_90a-only wrappers compile to nothing on
// other targets; a kernel using them checks KL_SM90A itself.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap and its enums (types only: libcuda is reached through the runtime)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include "common.cuh"  // kl::allow_smem, for the launcher below
#include "hgemm.h"

// Device code for sm_90a (wgmma, setmaxnreg exist only there, not in plain sm_90).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KL_SM90A 1
#else
#define KL_SM90A 0
#endif

namespace kl::hopper {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The steps' element types, bf16 and fp16: the same tiles, layouts and instructions, whose PTX names
// the type (.bf16 or .f16). kIsHalf picks the instruction; pack2 rounds two fp32 values into one
// 32-bit pair of the type.
template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half>;

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (kIsHalf<T>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// The dynamic shared memory from its first 1024-byte boundary on: the 128-byte swizzle repeats every
// 1024 bytes, so each swizzled tile starts on one.
template <typename T>
__device__ __forceinline__ T* swizzle_aligned(unsigned char* raw) {
  return reinterpret_cast<T*>(raw + ((1024 - (smem_u32(raw) & 1023)) & 1023));
}

// ---- Ampere: cp.async (PTX 9.7.9.25), ldmatrix (9.7.14.5.15), mma.sync m16n8k16 (9.7.14.5.8)
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lanes 8j..8j+7 give the row addresses of matrix j, which lands in r[j].
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem)));
}

// d += a @ b for one 16x8x16 tile: a row-major (4 regs of T x2), b "col" i.e. K-major (2 regs).
#define KL_MMA_16816(TY)                                                                               \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, " \
               "{%8, %9}, {%0, %1, %2, %3};\n"                                                           \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kIsHalf<T>) {
    KL_MMA_16816("f16");
  } else {
    KL_MMA_16816("bf16");
  }
}
#undef KL_MMA_16816

// ---- Hopper: mbarrier (PTX 9.7.13.15), TMA (9.7.9.25.5), wgmma (9.7.15)
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
#if KL_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
#endif
}
// Makes the barriers' initialisation visible to the async proxy (TMA's complete_tx) before use.
__device__ __forceinline__ void mbar_fence_init() {
#if KL_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also expects `bytes` of transactions (the TMA copies) in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if KL_SM90A
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
#endif
}
// A plain arrival (a consumer freeing a stage).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if KL_SM90A
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}
// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#if KL_SM90A
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// A 2-D box of the tensor map into shared memory; c0 is the inner (contiguous) coordinate, in
// elements; completion is counted in bytes on `bar`.
__device__ __forceinline__ void tma_load_2d(void* smem, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
#if KL_SM90A
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          smem_u32(smem)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
#endif
}

// wgmma shared-memory matrix descriptor (PTX 9.7.15.5.1.2.2) of a K-major tile stored as rows of
// 64 bf16 (128 bytes) in the 128-byte swizzle, as TMA writes it: start address >> 4 in bits 0-13,
// leading byte offset (unused for swizzled K-major; 1) in 16-29, stride byte offset (1024: from
// one 8-row group to the next) in 32-45, base offset 0 (tiles 1024-byte aligned), swizzle mode 1
// (128B) in bits 62-63. A k16 slice starts 32 bytes further along the row: the swizzle is applied
// by the hardware to the computed address, as for TMA.
__device__ __forceinline__ uint64_t sw128_desc(const void* smem) {
  const uint64_t addr = smem_u32(smem);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

__device__ __forceinline__ void wgmma_fence() {
#if KL_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if KL_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if KL_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Keeps the compiler from moving accumulator reads or writes across the asynchronous wgmma.
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (64 x N fp32, N/2 registers per thread) = A (64 x 16) @ B (16 x N) + scale_d * d, both K-major in
// shared memory (imm-trans-a = imm-trans-b = 0), A and B of type T: scale_d 1 accumulates (d set to
// zero before), 0 starts d from this product (no instruction but wgmma defines d, which keeps ptxas
// from serializing groups left in flight). Written out for each N used (the asm names every
// accumulator register).
#define KL_WGMMA_M64N128K16(TY)                                                                                  \
  asm volatile(                                                                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                               \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {"                                              \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                   \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                         \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                         \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                        \
      "%64, %65, p, 1, 1, 0, 0;\n}\n"                                                                            \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),          \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),    \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),  \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),  \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),  \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])   \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))
#define KL_WGMMA_M64N256K16(TY)                                                                                          \
  asm volatile(                                                                                                          \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                                                      \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {"                                                      \
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                 \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                 \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                                 \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                                 \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                                 \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                     \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "                \
      "%128, %129, p, 1, 1, 0, 0;\n}\n"                                                                                  \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                  \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),            \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),          \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),          \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),          \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),          \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),          \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),          \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),          \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),          \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),          \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),          \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),      \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),  \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),  \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])   \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))
template <int N, typename T>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d = 1) {
  static_assert(N == 128 || N == 256, "wgmma_m64k16 is written out for N = 128 and 256");
#if KL_SM90A
  if constexpr (N == 128) {
    if constexpr (kIsHalf<T>) {
      KL_WGMMA_M64N128K16("f16");
    } else {
      KL_WGMMA_M64N128K16("bf16");
    }
  } else {
    if constexpr (kIsHalf<T>) {
      KL_WGMMA_M64N256K16("f16");
    } else {
      KL_WGMMA_M64N256K16("bf16");
    }
  }
#endif
}
#undef KL_WGMMA_M64N128K16
#undef KL_WGMMA_M64N256K16

// Stores one warpgroup's m64nN fp32 accumulator as T into C (row stride ldc) at `c` (the
// fragment's row 0, column 0). Fragment layout (PTX 9.7.15.5.1.1.1, accumulator D): warp w of the
// warpgroup holds rows 16w..16w+15; lane l, register 4i+j holds row 16w + l/4 (+8 for j >= 2),
// column 8i + 2*(l%4) + (j & 1).
template <int N, typename T>
__device__ __forceinline__ void store_m64n(const float (&d)[N / 2], T* c, int ldc, int tid) {
  const int warp = tid / 32, lane = tid % 32;
  const int row = 16 * warp + lane / 4, col = 2 * (lane % 4);
#pragma unroll
  for (int i = 0; i < N / 8; ++i) {
    T* p = c + static_cast<size_t>(row) * ldc + 8 * i + col;
    *reinterpret_cast<uint32_t*>(p) = pack2<T>(d[4 * i + 0], d[4 * i + 1]);
    *reinterpret_cast<uint32_t*>(p + 8 * static_cast<size_t>(ldc)) = pack2<T>(d[4 * i + 2], d[4 * i + 3]);
  }
}

// setmaxnreg (PTX 9.7.19.6): the warpgroup's registers per thread, lowered (a producer that only
// issues copies) or raised (consumers holding accumulators); every thread of the warpgroup runs it.
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if KL_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if KL_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}

// The TMA ring of a warp-specialized step: kStages stages of a BM x BK tile of A and a BN x BK tile
// of Bt, each guarded by `full` (the producer's copies landed, counted in bytes) and `empty` (each of
// `consumer_warps` warps has finished reading it). init_ring sets the barriers up for the block;
// produce_ring, run by one producer thread, fills stage t % kStages with K tile t once that stage's
// previous tile was released.
template <int kStages>
__device__ __forceinline__ void init_ring(uint64_t* full, uint64_t* empty, uint32_t consumer_warps) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);                // the producer's arrive.expect_tx
      mbar_init(&empty[s], consumer_warps);  // one arrival per consumer warp
    }
    mbar_fence_init();
  }
  __syncthreads();
}

template <int BM, int BN, int BK, int kStages, typename T>
__device__ __forceinline__ void produce_ring(T* sA, T* sB, uint64_t* full, uint64_t* empty, const CUtensorMap* mapA,
                                             const CUtensorMap* mapB, int rowBase, int colBase, int tiles) {
  constexpr int kTileA = BM * BK, kTileB = BN * BK;
  constexpr uint32_t kStageBytes = (kTileA + kTileB) * sizeof(T);
  for (int t = 0; t < tiles; ++t) {
    const int s = t % kStages;
    if (t >= kStages) mbar_wait(&empty[s], ((t / kStages) - 1) & 1);  // its previous tile was read
    mbar_arrive_expect_tx(&full[s], kStageBytes);
    tma_load_2d(sA + s * kTileA, mapA, t * BK, rowBase, &full[s]);
    tma_load_2d(sB + s * kTileB, mapB, t * BK, colBase, &full[s]);
  }
}

// ---- host

// A TMA descriptor of a row-major (rows, cols) matrix of T (bf16 or fp16), read in boxes of box_rows x 64 columns
// (128 bytes: the widest box the 128-byte swizzle takes) written to shared memory in that swizzle.
// cuTensorMapEncodeTiled is reached through the runtime's driver entry point, so the library does
// not link libcuda. Returns kOk or a cudaError_t.
template <typename T>
int make_sw128_map(CUtensorMap* map, const T* base, int rows, int cols, int box_rows) {
  static_assert(sizeof(T) == 2, "64 elements make the 128-byte row of the swizzle");
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (encode == nullptr) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                             cudaEnableDefault, &found);
    if (err != cudaSuccess) return static_cast<int>(err);
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) return static_cast<int>(cudaErrorSymbolNotFound);
    encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * sizeof(T)};  // of dim 1, bytes
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUtensorMapDataType type = kIsHalf<T> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const CUresult res = encode(map, type, 2, const_cast<T*>(base), dims,
                              strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return res == CUDA_SUCCESS ? kOk : static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace kl::hopper

namespace {

// 1 in the device code of a library built for sm_90a, 0 in one built for plain sm_90 (whose
// wgmma steps are empty): read once by the launchers, which refuse to run the empty kernels.
__device__ int kl_hopper_sm90a = KL_SM90A;

inline bool library_has_sm90a() {
  static const bool has = [] {
    int value = 0;
    return cudaMemcpyFromSymbol(&value, kl_hopper_sm90a, sizeof value) == cudaSuccess && value == 1;
  }();
  return has;
}

// The host side of a step whose kernel reads A and B^T through 128-byte-swizzled TMA maps: the
// maps, the kernel's shared memory, one block per BM x BN tile of C.
template <int BM, int BN, int kThreads, size_t kSmem, typename T, typename Kernel>
int launch_tma_gemm(Kernel kernel, const T* A, const T* Bt, T* C, int M, int N, int K, cudaStream_t stream) {
  if (!library_has_sm90a()) return kl::kErrNeedsSm90a;
  CUtensorMap mapA, mapB;
  int status = kl::hopper::make_sw128_map(&mapA, A, M, K, BM);
  if (status == kl::kOk) status = kl::hopper::make_sw128_map(&mapB, Bt, N, K, BN);
  if (status == kl::kOk) status = kl::allow_smem(kernel, kSmem);
  if (status != kl::kOk) return status;
  kernel<<<dim3(N / BN, M / BM), kThreads, kSmem, stream>>>(mapA, mapB, C, M, N, K);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

// A TMA step's host side: its launchers (launch_tma_gemm with the tiles of the step's namespace NS,
// one per element type) and its row of the hgemm step table, under the step's name.
#define KL_HGEMM_TMA_STEP(name, NS, kernel)                                                             \
  namespace kl {                                                                                        \
  namespace {                                                                                           \
  template <typename T>                                                                                 \
  int launch_##name(const T* A, const T* Bt, T* C, int M, int N, int K, cudaStream_t stream) {          \
    return launch_tma_gemm<NS::BM, NS::BN, NS::kThreads, NS::kSmem>(kernel<T>, A, Bt, C, M, N, K, stream); \
  }                                                                                                     \
  constexpr HgemmStepInfo name{NS::BM, NS::BN, NS::BK, &launch_##name<__nv_bfloat16>, &launch_##name<__half>}; \
  }                                                                                                     \
  KL_STEP(hgemm, name);                                                                                 \
  }

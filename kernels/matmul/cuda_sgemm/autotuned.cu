// SGEMM ladder, step autotuned. C (M, N) = A (M, K) @ B (K, N), fp32, row-major, any M,
// N, K.
//
// sgemm_autotuned: a templated warp-tiled kernel with a cp.async multi-stage pipeline, instantiated
// for several tile shapes (up to 8x16 results per thread); the launcher takes the shape's index,
// Python times them per (M, N, K).
//
// The tile shapes are kl::kSgemmAutotunedConfigs (sgemm.h); the Python side times them once per
// shape and keeps the fastest. Against warptile (the step before) the kernel changes:
//   * more results per thread for the big tiles (8x16 = 128 accumulators, 128 or 256 threads
//     at 1-2 blocks per SM): 6 LDS.128 per 128 FFMA instead of 4 per 64. On Hopper an SM
//     sub-partition issues one warp instruction per clock and its 32 FP32 lanes take one FFMA
//     per clock, so every non-FFMA instruction costs an FFMA slot;
//   * an S-stage cp.async pipeline (S = 2..4 tiles in flight, no register staging): A with
//     4-byte copies that transpose it on the fly (8 lanes on 8 consecutive k of a row, so a warp
//     reads 4 full 32-byte sectors per instruction and, with the As row padded to BM + 4, writes
//     32 distinct banks), B with 16-byte copies;
//   * one barrier per BK-deep tile, and the shared -> register fragments double-buffered: the
//     fragments of k + 1 are loaded while the FFMAs of k run, and the barrier of a tile sits
//     just before its last k so that the next tile's first fragments are in flight then too;
//   * no bounds checks in the main loop: rows of A past M and columns of B past N are clamped
//     to the last valid one (they only feed rows / columns of C that are never stored), and
//     only the last, partial BK tile zero-fills its k >= K entries (cp.async src-size 0).
// VEC (N % 4 == 0 and 16-byte aligned B and C) selects 16-byte B copies and float4 C stores;
// otherwise B is copied 4 bytes at a time and C stored per element. A needs no alignment.

#include <type_traits>

#include "sgemm.h"
#include "sgemm_common.cuh"

namespace kl {
namespace {

// cp.async global -> shared copies: 4 bytes through L1 (.ca) or 16 bytes through L2 only (.cg).
// With ZFILL, `valid == false` copies nothing and zero-fills the destination (src-size 0; src must
// still be a valid address). Without __CUDA_ARCH__ (host compilation) they are plain copies, so the
// kernel body can be emulated on the CPU.
template <bool ZFILL>
__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool valid) {
#ifdef __CUDA_ARCH__
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (ZFILL) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src) : "memory");
  }
#else
  *dst = (!ZFILL || valid) ? *src : 0.0f;
#endif
}

template <bool ZFILL>
__device__ __forceinline__ void cp_async16(float* dst, const float* src, bool valid) {
#ifdef __CUDA_ARCH__
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (ZFILL) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
  }
#else
  for (int q = 0; q < 4; ++q) dst[q] = (!ZFILL || valid) ? src[q] : 0.0f;
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// A tile shape of sgemm_autotuned: block tile BM x BN, BK deep; warp tile WM x WN made of
// WMITER x WNITER sub-tiles; each thread TM x TN results per sub-tile; STAGES tiles in the

}  // namespace

// 65536 / (THREADS * MIN_BLOCKS), at most 255).
template <int BM_, int BN_, int BK_, int WM_, int WN_, int WNITER_, int TM_, int TN_, int THREADS_, int STAGES_,
          int MIN_BLOCKS_>
struct SgemmTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, WNITER = WNITER_, TM = TM_, TN = TN_;
  static constexpr int kThreads = THREADS_, kStages = STAGES_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER);
  static constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
  static constexpr int FM = WMITER * TM, FN = WNITER * TN;  // a thread's results: FM x FN
  // As[stage][k][m] (A transposed) with rows of BM + 4 floats: the 8 k of one A row, written by 8
  // lanes, land 4 banks apart. Bs[stage][k][n] unpadded (16-byte rows, read 64-128 bytes at a time).
  static constexpr int kLdA = BM + 4, kLdB = BN;
  static constexpr int kStageA = BK * kLdA, kStageB = BK * kLdB;
  static constexpr int kSmemBytes = static_cast<int>(sizeof(float)) * kStages * (kStageA + kStageB);
  // A copies: thread t takes k = t % 8 (+ 8 j) of rows t / 8 + i * kARowStep.
  static constexpr int kARowStep = kThreads / 8, kARows = BM / kARowStep, kAKs = BK / 8;
  // B copies: thread t takes the 4 columns 4 * (t % kBVecs) of rows t / kBVecs + i * kBRowStep.
  static constexpr int kBVecs = BN / 4, kBRowStep = kThreads / kBVecs, kBRows = BK / kBRowStep;

  static_assert(kThreads % 32 == 0 && (BM / WM) * (BN / WN) * 32 == kThreads, "one warp per warp tile");
  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles cover the block tile");
  static_assert(WMITER >= 1 && WMITER * WSUBM == WM && WNITER * WSUBN == WN, "sub-tiles cover the warp tile");
  static_assert((WSUBM / TM) * (WSUBN / TN) == 32 && WSUBM % TM == 0 && WSUBN % TN == 0,
                "a warp covers one sub-tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 fragments");
  static_assert(BK % 8 == 0 && BM % 32 == 0 && BM % kARowStep == 0, "A copy mapping");
  static_assert(kThreads % kBVecs == 0 && BK % kBRowStep == 0, "B copy mapping");
  static_assert(kStages >= 2, "at least double buffering");
};

}  // namespace kl

template <class Tile, bool VEC>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
    sgemm_autotuned(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C) {
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, S = Tile::kStages;
  constexpr int TM = Tile::TM, TN = Tile::TN, WMITER = Tile::WMITER, WNITER = Tile::WNITER;
  constexpr int FM = Tile::FM, FN = Tile::FN, LDA = Tile::kLdA, LDB = Tile::kLdB;
  extern __shared__ __align__(16) float kl_sgemm_smem[];
  float* const As = kl_sgemm_smem;                    // [S][BK][LDA]
  float* const Bs = kl_sgemm_smem + S * Tile::kStageA;  // [S][BK][LDB]

  const int tid = threadIdx.x;
  const int rowBase = blockIdx.y * BM;
  const int colBase = blockIdx.x * BN;

  // ---- global -> shared copy mapping (fixed for the whole K loop)
  const int aK = tid % 8, aR = tid / 8;
  const float* aSrc[Tile::kARows];  // row starts (clamped to M - 1), plus aK
#pragma unroll
  for (int i = 0; i < Tile::kARows; ++i) {
    aSrc[i] = A + static_cast<size_t>(min(rowBase + aR + i * Tile::kARowStep, M - 1)) * K + aK;
  }
  const int bR = tid / Tile::kBVecs, bC = (tid % Tile::kBVecs) * 4;
  const size_t bStep = static_cast<size_t>(Tile::kBRowStep) * N;
  // VEC: the vector clamped to the row's last one (N % 4 == 0); else one column offset per element.
  const float* const bSrc = B + static_cast<size_t>(bR) * N + (VEC ? min(colBase + bC, N - 4) : 0);
  int bCol[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) bCol[q] = min(colBase + bC + q, N - 1);

  const int tiles = (K + BK - 1) / BK;
  const int fullTiles = K / BK;

  // Copy tile `tile` (k0 = tile * BK) into ring slot `stage`; KC: the partial last tile.
  auto load_tile = [&](int stage, int k0, auto kc) {
    constexpr bool KC = decltype(kc)::value;
    float* const as = As + stage * Tile::kStageA + aK * LDA + aR;
#pragma unroll
    for (int j = 0; j < Tile::kAKs; ++j) {
      const bool ok = !KC || k0 + aK + 8 * j < K;
#pragma unroll
      for (int i = 0; i < Tile::kARows; ++i) {
        kl::cp_async4<KC>(as + 8 * j * LDA + i * Tile::kARowStep, ok ? aSrc[i] + k0 + 8 * j : A, ok);
      }
    }
    float* const bs = Bs + stage * Tile::kStageB + bR * LDB + bC;
    const float* const bt = bSrc + static_cast<size_t>(k0) * N;
#pragma unroll
    for (int i = 0; i < Tile::kBRows; ++i) {
      const bool ok = !KC || k0 + bR + i * Tile::kBRowStep < K;
      if constexpr (VEC) {
        kl::cp_async16<KC>(bs + i * Tile::kBRowStep * LDB, ok ? bt + i * bStep : B, ok);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          kl::cp_async4<KC>(bs + i * Tile::kBRowStep * LDB + q, ok ? bt + i * bStep + bCol[q] : B, ok);
        }
      }
    }
  };
  // Copy tile `tile` if there is one, and commit a group either way (the waits count groups).
  auto issue = [&](int tile, int stage) {
    if (tile < fullTiles) {
      load_tile(stage, tile * BK, std::false_type{});
    } else if (tile < tiles) {
      load_tile(stage, tile * BK, std::true_type{});
    }
    kl::cp_async_commit();
  };

  // ---- shared -> register fragments and the FFMAs
  const int warp = tid / 32, lane = tid % 32;
  const int warpRow = warp / (BN / Tile::WN), warpCol = warp % (BN / Tile::WN);
  const int tRow = lane / (Tile::WSUBN / TN), tCol = lane % (Tile::WSUBN / TN);
  const int mOff = warpRow * Tile::WM + tRow * TM;  // + wm * WSUBM
  const int nOff = warpCol * Tile::WN + tCol * TN;  // + wn * WSUBN

  float acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) acc[i][j] = 0.0f;
  }
  float fa[2][FM], fb[2][FN];
  auto load_frag = [&](int buf, const float* as, const float* bs, int k) {
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
      for (int q = 0; q < TM; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(as + k * LDA + mOff + wm * Tile::WSUBM + q);
        fa[buf][wm * TM + q + 0] = v.x;
        fa[buf][wm * TM + q + 1] = v.y;
        fa[buf][wm * TM + q + 2] = v.z;
        fa[buf][wm * TM + q + 3] = v.w;
      }
    }
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
      for (int q = 0; q < TN; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(bs + k * LDB + nOff + wn * Tile::WSUBN + q);
        fb[buf][wn * TN + q + 0] = v.x;
        fb[buf][wn * TN + q + 1] = v.y;
        fb[buf][wn * TN + q + 2] = v.z;
        fb[buf][wn * TN + q + 3] = v.w;
      }
    }
  };

  // ---- the pipeline: tiles 0..S-1 in flight, then one tile issued per tile consumed
#pragma unroll
  for (int s = 0; s < S; ++s) issue(s, s);
  kl::cp_async_wait<S - 1>();  // tile 0 has landed (this thread's copies) ...
  __syncthreads();             // ... and everyone's
  int stage = 0;
  load_frag(0, As, Bs, 0);
  for (int t = 0; t < tiles; ++t) {
    const float* const as = As + stage * Tile::kStageA;
    const float* const bs = Bs + stage * Tile::kStageB;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const int cur = k & 1;  // BK is even: k = 0 of every tile uses buffer 0
      if (k + 1 < BK) {
        load_frag(cur ^ 1, as, bs, k + 1);
      } else if (t + 1 < tiles) {
        // Every thread has read all of tile t (its last fragment was loaded at k = BK - 2), so
        // after this barrier its slot takes tile t + S; tile t + 1 must have landed.
        kl::cp_async_wait<S - 2>();
        __syncthreads();
        issue(t + S, stage);
        stage = stage + 1 == S ? 0 : stage + 1;
        load_frag(cur ^ 1, As + stage * Tile::kStageA, Bs + stage * Tile::kStageB, 0);
      }
#pragma unroll
      for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) acc[i][j] = fmaf(fa[cur][i], fb[cur][j], acc[i][j]);
      }
    }
  }

  // ---- epilogue: float4 stores (VEC) or per-element, rows >= M and columns >= N skipped
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = rowBase + mOff + wm * Tile::WSUBM + i;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
#pragma unroll
        for (int q = 0; q < TN; q += 4) {
          const int col = colBase + nOff + wn * Tile::WSUBN + q;
          const float* a = &acc[wm * TM + i][wn * TN + q];
          kl::store4_guarded<VEC>(C + static_cast<size_t>(row) * N + col, row < M, col, N,
                                  make_float4(a[0], a[1], a[2], a[3]));
        }
      }
    }
  }
}

namespace kl {
// The instantiated tile shapes, in the order of kSgemmAutotunedConfigs (sgemm.h).
//                         BM   BN  BK  WM  WN WNITER TM TN threads stages minBlocks
using SgemmTile0 = SgemmTile<128, 128, 8, 64, 64, 4, 4, 4, 128, 4, 2>;
using SgemmTile1 = SgemmTile<128, 128, 16, 64, 64, 4, 4, 4, 128, 3, 2>;
using SgemmTile2 = SgemmTile<128, 256, 8, 64, 64, 4, 4, 4, 256, 3, 1>;
using SgemmTile3 = SgemmTile<256, 128, 8, 64, 64, 4, 4, 4, 256, 3, 1>;
using SgemmTile4 = SgemmTile<128, 128, 16, 64, 32, 2, 4, 4, 256, 3, 2>;
using SgemmTile5 = SgemmTile<128, 64, 16, 64, 32, 2, 4, 4, 128, 3, 3>;
using SgemmTile6 = SgemmTile<64, 128, 16, 32, 64, 4, 4, 4, 128, 3, 3>;
using SgemmTile7 = SgemmTile<64, 64, 16, 32, 32, 2, 4, 4, 128, 3, 4>;

namespace {

// Raise the kernel's dynamic shared-memory limit once per device (not on every launch, so that a
// launch during CUDA-graph capture makes no attribute call).
template <class Tile, bool VEC>
int prepare_autotuned() {
  static std::atomic<bool> ready[kMaxDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    cudaGetLastError();
    return allow_smem(sgemm_autotuned<Tile, VEC>, Tile::kSmemBytes);
  }
  if (ready[dev].load(std::memory_order_acquire)) return kOk;
  const int status = allow_smem(sgemm_autotuned<Tile, VEC>, Tile::kSmemBytes);
  if (status == kOk) ready[dev].store(true, std::memory_order_release);
  return status;
}

template <class Tile>
int launch_autotuned(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
  if (cdiv(M, Tile::BM) > kSgemmMaxGridY) return kErrBadSize;
  // A is copied 4 bytes at a time: only B (16-byte copies) and C (float4 stores) need alignment.
  const bool vec = N % 4 == 0 && aligned16(B) && aligned16(C);
  auto kernel = vec ? sgemm_autotuned<Tile, true> : sgemm_autotuned<Tile, false>;
  const int status = vec ? prepare_autotuned<Tile, true>() : prepare_autotuned<Tile, false>();
  if (status != kOk) return status;
  const dim3 grid(static_cast<unsigned>(cdiv(N, Tile::BN)), static_cast<unsigned>(cdiv(M, Tile::BM)));
  kernel<<<grid, Tile::kThreads, Tile::kSmemBytes, stream>>>(M, N, K, A, B, C);
  return launch_status();
}

// The launcher's own pick when no config is named: the biggest tile that still gives every SM
// two blocks, else smaller ones (the Python picker times them all instead).
int default_autotuned_config(int M, int N) {
  const int64_t sms = num_sms();
  if (cdiv(M, 128) * cdiv(N, 128) >= 2 * sms) return 0;
  if (cdiv(M, 64) * cdiv(N, 128) >= sms) return 6;
  return 7;
}

}  // namespace

int run_sgemm_autotuned(const float* A, const float* B, float* C, int M, int N, int K, int config,
                        cudaStream_t stream) {
  if (config < 0) config = default_autotuned_config(M, N);
  switch (config) {
    case 0: return launch_autotuned<SgemmTile0>(A, B, C, M, N, K, stream);
    case 1: return launch_autotuned<SgemmTile1>(A, B, C, M, N, K, stream);
    case 2: return launch_autotuned<SgemmTile2>(A, B, C, M, N, K, stream);
    case 3: return launch_autotuned<SgemmTile3>(A, B, C, M, N, K, stream);
    case 4: return launch_autotuned<SgemmTile4>(A, B, C, M, N, K, stream);
    case 5: return launch_autotuned<SgemmTile5>(A, B, C, M, N, K, stream);
    case 6: return launch_autotuned<SgemmTile6>(A, B, C, M, N, K, stream);
    case 7: return launch_autotuned<SgemmTile7>(A, B, C, M, N, K, stream);
    default: return kErrUnknownConfig;
  }
}
static_assert(count_of(kSgemmAutotunedConfigs) == 8, "one name per instantiated tile shape");

}  // namespace kl

namespace kl {
namespace {

int autotuned(const float* A, const float* B, float* C, int M, int N, int K, int config, cudaStream_t stream) {
  return run_sgemm_autotuned(A, B, C, M, N, K, config, stream);
}

}  // namespace

KL_STEP(sgemm, autotuned);

}  // namespace kl

// Hopper GEMM ladder, step mma_sync: tensor cores the Ampere way. C = A @ B, bf16 (or fp16) in,
// fp32 accumulation, the same type out; A (M, K) and Bt (N, K) row-major (hgemm.h); M, N multiples of 128,
// K of 32.
//
// A block of 8 warps computes a 128x128 tile of C; each warp a 64x32 sub-tile as 4x4 tiles of
// mma.sync.m16n8k16. 128x32 tiles of A and of Bt go to shared memory by 16-byte cp.async copies,
// double buffered (the next K tile is in flight during this one's math); ldmatrix.x4 reads the
// fragments, which with both operands K-major need no transpose. Rows are padded from 64 to 80
// bytes so that the 8 row addresses of each ldmatrix phase hit 8 different 16-byte bank groups.

#include "hgemm.h"
#include "hopper_common.cuh"

namespace ms {
constexpr int BM = 128, BN = 128, BK = 32;
constexpr int kThreads = 256;          // 8 warps, 2 (M) x 4 (N)
constexpr int WM = 64, WN = 32;        // warp tile
constexpr int MI = WM / 16, NI = WN / 8;  // mma tiles per warp: 4 x 4
constexpr int kLd = BK + 8;            // padded row, elements (80 bytes)
constexpr int kChunks = BM * BK / 8;   // 16-byte chunks per operand tile: 512
static_assert((BM / WM) * (BN / WN) * 32 == kThreads, "one warp per warp tile");
static_assert(kChunks % kThreads == 0 && BM == BN, "A and Bt tiles load alike");
}  // namespace ms

template <typename T>
__global__ void __launch_bounds__(ms::kThreads)
    hgemm_mma_sync(const T* __restrict__ A, const T* __restrict__ Bt, T* __restrict__ C, int M, int N, int K) {
  using namespace ms;
  using namespace kl::hopper;
  __shared__ __align__(16) T As[2][BM][kLd];
  __shared__ __align__(16) T Bs[2][BN][kLd];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warpM = warp / (BN / WN), warpN = warp % (BN / WN);
  const int rowBase = blockIdx.y * BM, colBase = blockIdx.x * BN;
  const T* aTile = A + static_cast<size_t>(rowBase) * K;
  const T* bTile = Bt + static_cast<size_t>(colBase) * K;

  auto load = [&](int buf, int k0) {
#pragma unroll
    for (int c = tid; c < kChunks; c += kThreads) {
      const int row = c / (BK / 8), col = (c % (BK / 8)) * 8;
      cp_async16(&As[buf][row][col], aTile + static_cast<size_t>(row) * K + k0 + col);
      cp_async16(&Bs[buf][row][col], bTile + static_cast<size_t>(row) * K + k0 + col);
    }
  };

  float acc[MI][NI][4] = {};
  const int tiles = K / BK;
  load(0, 0);
  cp_async_commit();
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1;
    if (t + 1 < tiles) load(buf ^ 1, (t + 1) * BK);  // the buffer computed on at t - 1 (a barrier ago)
    cp_async_commit();   // possibly empty: keeps one group per iteration
    cp_async_wait<1>();  // this thread's copies of tile t have landed
    __syncthreads();     // and everyone's
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[MI][4], b[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)  // lanes 0-15: rows 0-15 at k 0; lanes 16-31: at k 8
        ldmatrix_x4(a[mi], &As[buf][warpM * WM + mi * 16 + lane % 16][kk + (lane / 16) * 8]);
#pragma unroll
      for (int p = 0; p < NI / 2; ++p) {  // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
        uint32_t r[4];
        ldmatrix_x4(r, &Bs[buf][warpN * WN + p * 16 + lane % 8 + (lane / 16) * 8][kk + ((lane / 8) % 2) * 8]);
        b[2 * p][0] = r[0];
        b[2 * p][1] = r[1];
        b[2 * p + 1][0] = r[2];
        b[2 * p + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) mma_16816<T>(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
    }
    __syncthreads();  // all reads of `buf` done before the next iteration's copies overwrite it
  }

  // C fragment of m16n8: c0, c1 at (lane/4, 2*(lane%4) + {0, 1}); c2, c3 eight rows below.
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int row = rowBase + warpM * WM + mi * 16 + lane / 4;
      const int col = colBase + warpN * WN + ni * 8 + 2 * (lane % 4);
      T* p = C + static_cast<size_t>(row) * N + col;
      *reinterpret_cast<uint32_t*>(p) = pack2<T>(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<uint32_t*>(p + 8 * static_cast<size_t>(N)) = pack2<T>(acc[mi][ni][2], acc[mi][ni][3]);
    }
  }
}

namespace kl {
namespace {

template <typename T>
int launch_mma_sync(const T* A, const T* Bt, T* C, int M, int N, int K, cudaStream_t stream) {
  const dim3 grid(N / ms::BN, M / ms::BM);
  hgemm_mma_sync<T><<<grid, ms::kThreads, 0, stream>>>(A, Bt, C, M, N, K);
  return static_cast<int>(cudaGetLastError());
}

constexpr HgemmStepInfo mma_sync{ms::BM, ms::BN, ms::BK, &launch_mma_sync<__nv_bfloat16>, &launch_mma_sync<__half>};

}  // namespace
KL_STEP(hgemm, mma_sync);
}  // namespace kl

// N-split consumers for the wgmma + TMA GEMM of hgemm_wgmma.cuh: the same producer warpgroup,
// mbarrier ring, grouped persistent raster and TMA-store epilogue, but the two consumer warpgroups
// split the BM x BN tile by columns (each m64 x BN/2 for every m64 block of BM) instead of by rows.
// So a tile only 64 rows tall still has two warpgroups issuing wgmma: a prefill GEMM of 128 rows
// then runs 64 x 64 tiles, 128 CTAs for N = 4096 where hgemm_wgmma's two consumers need BM = 128
// (64 CTAs), the layout cuBLAS's own kernel for that shape has (H100, 2026-11-26: nvjet 64x64, two
// consumer warpgroups).  This kernel lives in its own file so that hgemm_wgmma.cuh, whose hash is
// the build id every measurement of hgemm_wgmma is keyed by, stays byte for byte what was measured.
//
// What differs from HgemmWgmma (CONSUMERS = 2 there):
//   * consumer wg (0 or 1) multiplies A's m64 blocks by B's rows [wg BN/2, (wg + 1) BN/2) of the
//     slot (K-major B: that many 128-byte-swizzled rows further, whole 8-row atoms; MN-major B: whole
//     BK-wide chunks further), with wgmma m64n(BN/2)k16;
//   * empty[s] counts the 8 consumer warps, as with two consumers there;
//   * epilogue: both warpgroups write their halves of the same 64 x 64 staging boxes, so they meet at
//     one 256-thread named barrier (id 3) before and after, and one thread (consumer 0's first)
//     waits for the last store's reads, issues the TMA stores and commits them.
// The ring, staging and barrier layout are HgemmWgmma<..., CONSUMERS = 1>'s (BM x BN staging, the
// same slot bytes), whose producer and raster this kernel calls.
#pragma once
#include "wgmma_narrow.cuh"   // its wgmma N = 32; inlines hgemm_wgmma.cuh

namespace autosched_wgmma {

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int GROUP>
struct HgemmWgmmaNSplit {
  using Base = HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, 1, GROUP>;
  static constexpr int BK = Base::BK;
  static constexpr int MW = BM / 64;                // m64 blocks: each consumer runs all of them
  static constexpr int HN = BN / 2;                 // columns a consumer owns: its wgmma N
  static constexpr int ACC = HN / 2;                // accumulators of one m64 block
  static constexpr int THREADS = 384;
  static constexpr int EPI_BAR = 3;                 // both consumers (1 and 2 stay free)

  static_assert(BN == 64 || BN == 128 || BN == 256, "a consumer's half of BN is a wgmma N: 32, 64 or 128");
  static_assert(MW * ACC <= 128, "accumulators: MW x BN / 4 <= 128 floats a consumer thread");
  static_assert(B_MN == 0 || HN % BK == 0, "an MN-major B: a consumer's half spans whole BK-wide chunks");

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars,
                                  int M, int N, int tiles_m, int tiles_n, int kslots) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const bool storer = wg == 0 && t == 0;
    if (storer) tensormap_prefetch(tmC);
    const int tiles = tiles_m * tiles_n;
    float acc[MW][ACC];
    unsigned it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int m0, n0;
      Base::tile_coords(tile, tiles_m, tiles_n, M, m0, n0);
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[w][i] = 0.0f;
      for (int kb = 0; kb < kslots; ++kb, ++it) {
        const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
        mbar_wait(bars + 8 * s, phase);
        __syncwarp();                              // the spin may leave lanes apart; wgmma is .aligned
        const unsigned a = ring + s * Base::STAGE_BYTES, b = a + Base::A_SLOT;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
          const unsigned long long db = Base::template desc<B_MN>(b, wg * HN, kk);
#pragma unroll
          for (int w = 0; w < MW; ++w)
            Wgmma<HN>::template mma<BF16, A_MN, B_MN>(acc[w], Base::template desc<A_MN>(a, w * 64, kk), db);
        }
        wgmma_commit();
        wgmma_wait<1>();
        if (kb > 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
      }
      wgmma_wait<0>();
      if (lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));

      // epilogue: both halves into the shared 64 x 64 boxes, then one thread's TMA stores
      if (storer) bulk_wait_read_all();
      asm volatile("bar.sync %0, 256;\n" ::"r"(EPI_BAR) : "memory");
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; i += 2) {
          const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
          const int col = wg * HN + 8 * (i / 4) + 2 * (lane % 4);
          const int box = col / 64, unit = (col % 64) / 8;
          const unsigned dst = cstage + (w * (BN / 64) + box) * Base::C_BOX + row * 128 + ((unit ^ (row % 8)) * 16) +
                               (col % 8) * 2;
          unsigned packed;
          if constexpr (BF16) {
            __nv_bfloat162 v = __floats2bfloat162_rn(acc[w][i], acc[w][i + 1]);
            packed = *reinterpret_cast<unsigned*>(&v);
          } else {
            __half2 v = __floats2half2_rn(acc[w][i], acc[w][i + 1]);
            packed = *reinterpret_cast<unsigned*>(&v);
          }
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(packed) : "memory");
        }
      fence_async_smem();
      asm volatile("bar.sync %0, 256;\n" ::"r"(EPI_BAR) : "memory");
      if (storer) {
#pragma unroll
        for (int w = 0; w < MW; ++w) {
          const int row0 = m0 + w * 64;
          if (row0 >= M) continue;
#pragma unroll
          for (int box = 0; box < BN / 64; ++box)
            if (n0 + box * 64 < N) tma_store(tmC, cstage + (w * (BN / 64) + box) * Base::C_BOX, n0 + box * 64, row0);
        }
        bulk_commit();
      }
    }
    if (storer) bulk_wait_all();
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N,
                             int K, unsigned char* smem_raw) {
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * Base::STAGE_BYTES, bars = base + Base::BAR_OFFSET;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(bars + 8 * s, 1);
        mbar_init(bars + 8 * (STAGES + s), 8);     // empty: lane 0 of each of the 8 consumer warps
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      fence_async_smem();
    }
    __syncthreads();
    if (threadIdx.x < 128) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      if (threadIdx.x == 0) Base::producer(tmA, tmB, ring, bars, M, tiles_m, tiles_n, kslots);
    } else {
      asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
      consumer(tmC, ring, cstage, bars, M, N, tiles_m, tiles_n, kslots);
    }
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int GROUP>
__global__ void __launch_bounds__(384, 1)
hgemm_wgmma_nsplit(const __grid_constant__ autosched_wgmma::TensorMap tmA, const __grid_constant__ autosched_wgmma::TensorMap tmB,
                   const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaNSplit<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, GROUP>::run(&tmA, &tmB, &tmC, M, N, K, smem);
}

// Pairs of hgemm_wgmma_cluster.cuh whose tile is computed by two consumer warpgroups taking
// alternate k-blocks, each into accumulators of its own: consecutive wgmma groups then belong to
// independent accumulator chains, so the tensor pipe never drains between a group and the next
// while one consumer waits for its slot, commits and releases.  At the end of a tile consumer 1
// hands its sums to consumer 0 through shared memory, and consumer 0 stores C.
// (EXPERIMENT: rendered by scripts/experiments/wgmma_kalt.py; no template serves it.)
//
// Ring protocol: as the pair kernel's, but each slot is read by one consumer warpgroup only (the
// one whose k-block it holds), so empty[s] counts 4 warps of each CTA of the pair.
// Hand-off per tile: both consumers meet at named barrier KALT_FREE (consumer 0 has read the
// scratch's previous contents), consumer 1 stores its accumulators in fragment order, both meet at
// KALT_FULL, consumer 0 adds them.
#pragma once
#include "hgemm_wgmma_cluster.cuh"

namespace autosched_wgmma {

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int GROUP, int CDIM>
struct HgemmWgmmaClusterKAlt : HgemmWgmmaCluster<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, 1, GROUP, 2, CDIM> {
  using Pair = HgemmWgmmaCluster<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, 1, GROUP, 2, CDIM>;
  using Base = typename Pair::Base;
  using Base::A_SLOT;
  using Base::ACC;
  using Base::BAR_OFFSET;
  using Base::BK;
  using Base::MW;
  using Base::STAGE_BYTES;
  static constexpr int SCRATCH = (BAR_OFFSET + 2 * STAGES * 8 + 127) / 128 * 128;
  static constexpr int SMEM_BYTES = SCRATCH + BM * BN * 4 + 1024;
  static constexpr int KALT_FREE = 3, KALT_FULL = 4;
  static_assert(SMEM_BYTES <= 232448, "shared memory: ring, staging and consumer 1's sums");

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars,
                                  unsigned scratch, int rank, int M, int N, int pm_count, int pn_count, int kslots) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, lane = t % 32;
    if (t == 0) tensormap_prefetch(tmC);
    const int pairs = pm_count * pn_count;
    const int clusters = cluster_reg_count();
    const unsigned peer_bars = cluster_map(bars, rank ^ 1);
    float acc[MW][ACC];
    unsigned first = 0;                            // ring index of the tile's k-block 0
    for (int pair = cluster_reg_id(); pair < pairs; pair += clusters, first += kslots) {
      int m0, n0;
      Pair::pair_tile(pair, rank, pm_count, pn_count, m0, n0);
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[w][i] = 0.0f;
      int last = -1;                               // this consumer's previous k-block, still to release
      for (int kb = wg; kb < kslots; kb += 2) {
        const unsigned it = first + kb, s = it % STAGES, phase = (it / STAGES) & 1;
        mbar_wait(bars + 8 * s, phase);
        __syncwarp();
        const unsigned a = ring + s * STAGE_BYTES, b = a + A_SLOT;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
          const unsigned long long db = Base::template desc<B_MN>(b, 0, kk);
#pragma unroll
          for (int w = 0; w < MW; ++w)
            Wgmma<BN>::template mma<BF16, A_MN, B_MN>(acc[w], Base::template desc<A_MN>(a, w * 64, kk), db);
        }
        wgmma_commit();
        wgmma_wait<1>();
        if (last >= 0 && lane == 0) {
          const unsigned prev = 8 * (STAGES + (first + last) % STAGES);
          mbar_arrive(bars + prev);
          mbar_arrive_remote(peer_bars + prev);
        }
        last = kb;
      }
      wgmma_wait<0>();
      if (last >= 0 && lane == 0) {
        const unsigned prev = 8 * (STAGES + (first + last) % STAGES);
        mbar_arrive(bars + prev);
        mbar_arrive_remote(peer_bars + prev);
      }
      // consumer 1's sums to consumer 0, float4 j of thread t at j x 128 + t (conflict-free)
      asm volatile("bar.sync %0, 256;\n" ::"n"(KALT_FREE) : "memory");
      if (wg == 1) {
#pragma unroll
        for (int w = 0; w < MW; ++w)
#pragma unroll
          for (int i = 0; i < ACC; i += 4)
            asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(scratch + ((w * ACC + i) / 4 * 128 + t) * 16),
                         "f"(acc[w][i]), "f"(acc[w][i + 1]), "f"(acc[w][i + 2]), "f"(acc[w][i + 3]) : "memory");
      }
      asm volatile("bar.sync %0, 256;\n" ::"n"(KALT_FULL) : "memory");
      if (wg == 0) {
#pragma unroll
        for (int w = 0; w < MW; ++w)
#pragma unroll
          for (int i = 0; i < ACC; i += 4) {
            float4 v;
            asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(scratch + ((w * ACC + i) / 4 * 128 + t) * 16) : "memory");
            acc[w][i] += v.x;
            acc[w][i + 1] += v.y;
            acc[w][i + 2] += v.z;
            acc[w][i + 3] += v.w;
          }
        Pair::epilogue(acc, tmC, cstage, 0, t, M, N, m0, n0);
      }
    }
    if (wg == 0 && t == 0) bulk_wait_read_all();
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N, int K,
                             unsigned char* smem_raw) {
    if (cluster_reg_nctarank() != 2) __trap();
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * STAGE_BYTES, bars = base + BAR_OFFSET;
    const int rank = cluster_reg_ctarank();
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    const int pm_count = CDIM == 0 ? (tiles_m + 1) / 2 : tiles_m;
    const int pn_count = CDIM == 0 ? tiles_n : (tiles_n + 1) / 2;
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(bars + 8 * s, 1);
        mbar_init(bars + 8 * (STAGES + s), 2 * 4);   // the 4 warps of one consumer, in both CTAs
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      fence_async_smem();
    }
    cluster_sync_all();
    if (threadIdx.x < 128) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      if (threadIdx.x == 0) Pair::producer(tmA, tmB, ring, bars, rank, pm_count, pn_count, M, N, kslots);
    } else {
      asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
      consumer(tmC, ring, cstage, bars, base + SCRATCH, rank, M, N, pm_count, pn_count, kslots);
    }
    cluster_sync_all();
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int GROUP, int CDIM>
__global__ void __launch_bounds__(384, 1)
hgemm_wgmma_cluster_kalt(const __grid_constant__ autosched_wgmma::TensorMap tmA,
                         const __grid_constant__ autosched_wgmma::TensorMap tmB,
                         const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaClusterKAlt<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, GROUP, CDIM>::run(&tmA, &tmB, &tmC,
                                                                                                  M, N, K, smem);
}

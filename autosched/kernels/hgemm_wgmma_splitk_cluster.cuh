// Split-K whose slices are the CTAs of one thread-block cluster, summed through distributed shared
// memory: hgemm_wgmma_splitk.cuh's work units, producer and consumer mainloop, but the FP32
// partials never leave the SMs.  The global reduction costs a short GEMM three round trips to L2
// after its last k-block (partials stored and fenced, the counter's atomic, the other partials
// loaded) before the last slice can store C; here the slices of a tile run side by side in one
// cluster (co-scheduled by the hardware), ranks 1..SPLIT_K-1 write their accumulators straight
// into rank 0's shared memory and rank 0 adds them and stores C.  No workspace, no counters.
//
// Work units.  The grid (a multiple of SPLIT_K, launched with the cluster attribute (SPLIT_K, 1,
// 1)) walks u = blockIdx.x; u += gridDim.x as the split-K kernel does, so rank r of cluster c
// holds slice u % SPLIT_K = r of tile u / SPLIT_K = c, c + clusters, ...: every CTA of a cluster
// walks the same tiles, one slice each, and sums (or sends) once per tile.
//
// Protocol, per tile (the n-th this CTA walks; phase parity n & 1):
//   * received (in rank 0; count (SPLIT_K - 1) x consumer threads): each consumer thread of rank
//     r > 0 stores its float4s of accumulators to rank 0's buffer r - 1 with st.shared::cluster
//     (fragment order: float4 j of consumer thread c at j x CT + c, the position rank 0's thread c
//     adds to its own, as the split-K kernel's workspace is laid out) and arrives with release at
//     cluster scope, which makes those remote stores visible to an acquire of the phase.
//   * rank 0's consumers wait on received with acquire at cluster scope, add the buffers to their
//     accumulators and run the usual epilogue.  Before that they free the buffers: every consumer
//     thread arrives (release, cluster scope: its loads are done) on `taken` in each rank r > 0.
//   * taken (in each rank r > 0; count: consumer threads): a sender waits on it (acquire, cluster
//     scope) before it overwrites rank 0's buffer with its next tile's partial; the first wait
//     passes at once (a fresh barrier's phase before the first counts as complete).
//   * start: barrier init, fence.mbarrier_init.release.cluster, then a cluster barrier (all threads
//     of every CTA), so no remote store or arrival reaches a CTA that has not initialized.
//   * exit: a cluster barrier again: rank 0's last arrivals on `taken` land in CTAs that may have
//     finished, and a CTA's shared memory is gone once it exits.
// The ring's own barriers stay local: no operand is shared, no slot is multicast.
// The kernel traps if launched without a cluster of exactly SPLIT_K blocks.
#pragma once
#include "hgemm_wgmma_cluster.cuh"
#include "hgemm_wgmma_splitk.cuh"

namespace autosched_wgmma {

// returns once the phase of parity `parity` completed, acquiring at cluster scope what the
// releasing arrivals of other CTAs published
__device__ __forceinline__ void mbar_wait_cluster(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
// an arrival on the barrier at `cluster_bar` (a shared::cluster address) releasing at cluster scope
// this thread's earlier accesses, remote stores included
__device__ __forceinline__ void mbar_arrive_remote_release(unsigned cluster_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}
__device__ __forceinline__ void st_cluster_v4(unsigned cluster_addr, float a, float b, float c, float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(cluster_addr), "f"(a), "f"(b), "f"(c),
               "f"(d) : "memory");
}

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int SPLIT_K>
struct HgemmWgmmaSplitKCluster : HgemmWgmmaSplitK<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP, SPLIT_K> {
  using Base = HgemmWgmmaSplitK<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP, SPLIT_K>;
  using Base::ACC;
  using Base::BAR_OFFSET;
  using Base::BK;
  using Base::CT;
  using Base::MW;
  using Base::VEC;
  static constexpr int PARTIAL_BYTES = BM * BN * 4;              // one slice's FP32 tile
  static constexpr int SUM_BARS = BAR_OFFSET + 2 * STAGES * 8;   // received, then taken
  static constexpr int SUM_BUF = (SUM_BARS + 16 + 127) / 128 * 128;
  static constexpr int SMEM_BYTES = SUM_BUF + (SPLIT_K - 1) * PARTIAL_BYTES + 1024;

  static_assert(SPLIT_K >= 2 && SPLIT_K <= 4, "clusters of 2 to 4 slices (1 is hgemm_wgmma itself)");
  static_assert(SMEM_BYTES <= 232448, "shared memory: ring, staging and the peers' partials within the opt-in limit");

  struct ClusterSum {
    unsigned base;                                 // this CTA's aligned shared base (the same in every CTA)
    unsigned n;                                    // tiles summed or sent so far: the barriers' parity
    __device__ __forceinline__ bool operator()(float (&acc)[MW][ACC], int tile, int slice, int ct) {
      const unsigned received = base + SUM_BARS, taken = received + 8, buf = base + SUM_BUF;
      const unsigned parity = n++ & 1;
      if (slice != 0) {
        mbar_wait_cluster(taken, parity ^ 1);      // rank 0 has added this buffer's last partial
        const unsigned dst = cluster_map(buf + (slice - 1) * PARTIAL_BYTES, 0) + ct * 16;
#pragma unroll
        for (int w = 0; w < MW; ++w)
#pragma unroll
          for (int i = 0; i < ACC; i += 4)
            st_cluster_v4(dst + (w * ACC + i) / 4 * CT * 16, acc[w][i], acc[w][i + 1], acc[w][i + 2], acc[w][i + 3]);
        mbar_arrive_remote_release(cluster_map(received, 0));
        return false;
      }
      mbar_wait_cluster(received, parity);
#pragma unroll 1
      for (int r = 1; r < SPLIT_K; ++r) {
        const unsigned src = buf + (r - 1) * PARTIAL_BYTES + ct * 16;
#pragma unroll
        for (int w = 0; w < MW; ++w)
#pragma unroll
          for (int i = 0; i < ACC; i += 4) {
            float4 v;
            asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(src + (w * ACC + i) / 4 * CT * 16) : "memory");
            acc[w][i] += v.x;
            acc[w][i + 1] += v.y;
            acc[w][i + 2] += v.z;
            acc[w][i + 3] += v.w;
          }
      }
#pragma unroll 1
      for (int r = 1; r < SPLIT_K; ++r) mbar_arrive_remote_release(cluster_map(taken, r));
      return true;
    }
  };

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N, int K,
                             unsigned char* smem_raw) {
    // the slice of every unit is the cluster rank: the walk below relies on it
    if (cluster_reg_nctarank() != SPLIT_K || cluster_reg_ctarank() != blockIdx.x % SPLIT_K) __trap();
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * Base::STAGE_BYTES, bars = base + BAR_OFFSET;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(bars + 8 * s, 1);
        mbar_init(bars + 8 * (STAGES + s), 4 * CONSUMERS);
      }
      mbar_init(base + SUM_BARS, (SPLIT_K - 1) * CT);        // received: every sender's consumer threads
      mbar_init(base + SUM_BARS + 8, CT);                    // taken: rank 0's consumer threads
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      fence_async_smem();
    }
    cluster_sync_all();
    if (threadIdx.x < 128) {
      if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      if (threadIdx.x == 0) Base::producer(tmA, tmB, ring, bars, tiles_m, tiles_n, kslots);
    } else {
      if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
      ClusterSum sum{base, 0};
      Base::consumer(tmC, ring, cstage, bars, M, N, tiles_m, tiles_n, kslots, sum);
    }
    cluster_sync_all();
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int SPLIT_K>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_wgmma_splitk_cluster(const __grid_constant__ autosched_wgmma::TensorMap tmA,
                           const __grid_constant__ autosched_wgmma::TensorMap tmB,
                           const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaSplitKCluster<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP, SPLIT_K>::run(
      &tmA, &tmB, &tmC, M, N, K, smem);
}

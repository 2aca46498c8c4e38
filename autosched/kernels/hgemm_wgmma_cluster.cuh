// Thread-block clusters of 2 with TMA multicast for the wgmma + TMA GEMM of hgemm_wgmma.cuh: the same
// producer and consumer warpgroups, mbarrier ring and TMA-store epilogue, but the two CTAs of a
// cluster compute two adjacent output tiles that share one operand, and each loads only half of
// that operand's slot, multicast into both CTAs' shared memory: the shared operand crosses from L2
// to the SMs once for two tiles (cluster = 1 renders hgemm_wgmma itself).  HgemmWgmma's pipeline (Ring,
// loads, mma, epilogue) with a walk over pairs, half loads multicast and releases to both producers.
//
// CDIM = 0 (pair along M): tiles (m, n) and (m + 1, n) share B's slot -> B is multicast, A is not.
// CDIM = 1 (pair along N): tiles (m, n) and (m, n + 1) share A's slot -> A is multicast, B is not.
//
// Pairs.  The grid (a multiple of 2, launched with the cluster attribute (2, 1, 1): blockIdx.x =
// 2 x cluster + rank) walks pair units p = cluster; p += clusters, over a grid of ceil(tiles / 2)
// pair rows (CDIM 0) or columns (CDIM 1) in the grouped raster of hgemm_wgmma (GROUP pair rows
// walked column by column); rank r of the cluster takes tile 2 x pair + r along CDIM.  Both CTAs
// walk the same pairs and the same ceil(K / BK) slots per pair, so every multicast, expect_tx and
// arrival below has its partner.  Where the tiles along CDIM are odd, the last pairs' rank 1 tile
// lies outside C: that CTA still loads its half of the shared operand (its peer needs it), waits
// and releases every slot, runs its wgmma on whatever its own operand's slot holds and stores
// nothing (the epilogue clips at M and N); it skips its own operand's load and expects that many
// bytes fewer.
//
// Protocol, per ring slot s (the same shared-memory offsets in both CTAs: same kernel, same layout):
//   * full[s] (count 1, local): this CTA's producer arrives with expect_tx(own operand bytes + the
//     WHOLE shared slot), then loads its own operand (plain TMA) and its half of the shared slot
//     with .multicast::cluster (ctaMask 0b11): the copy engine writes that half into both CTAs and
//     signals complete_tx on full[s] at the same offset in each.  A peer's half may land before
//     this CTA's expect_tx: the phase cannot complete without this producer's arrival.
//   * empty[s] (count 2 x 4 x CONSUMERS): lane 0 of every consumer warp of BOTH CTAs arrives once
//     it has read slot s: on its own empty[s] (shared::cta) and on the peer's (mapa +
//     mbarrier.arrive.shared::cluster), because this CTA's producer writes into the peer's slot
//     too.  A producer waits on its own empty[s], so it never overwrites a slot that either CTA is
//     still reading.  No CTA's arrivals can run a phase ahead: its next use of slot s needs the peer
//     producer's half, which waits for this phase.
//     Both the remote arrival and the wait keep PTX's default CTA-scope semantics: the consumers
//     only read a slot through wgmma, whose reads wait_group has retired before the arrival, so
//     there is no write of theirs to publish, only a completed read before the peer's TMA
//     overwrites it; cluster scope ordered nothing more and was 1.5-3x slower
//     (scripts/experiments/wgmma_cluster_scope.py).
//   * start: mbarrier init, fence.mbarrier_init.release.cluster, then a cluster barrier (all
//     threads of both CTAs), so no multicast or remote arrival reaches an uninitialized barrier.
//   * exit: a cluster barrier again, so no CTA exits (freeing its shared memory) while its peer may
//     still arrive on its empty barriers (its writes into this CTA are awaited by this CTA's own
//     consumers on full[s] before they get here).
// The kernel traps if launched without a cluster of exactly CLUSTER blocks.
//
// Half slots.  K-major shared operand (rows of SWZ bytes): rank r loads rows [r R/2, (r + 1) R/2)
// (R = BN or BM) in one box of (BK, R / 2) at byte r (R / 2) SWZ.  MN-major shared operand (chunks
// of BK along M/N by BK rows of k): rank r loads k rows [r BK/2, (r + 1) BK/2) of every chunk in
// boxes of (BK, BK / 2) at byte r (BK / 2) SWZ of the chunk.  Both offsets are whole 8-row swizzle
// atoms, so each half lands exactly where the whole box would have put it.
#pragma once
#include "hgemm_wgmma.cuh"

namespace autosched_wgmma {

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int CLUSTER,
          int CDIM>
struct HgemmWgmmaCluster : HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP> {
  using Base = HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP>;
  using Base::A_SLOT;
  using Base::ACC;
  using Base::B_SLOT;
  using Base::BAR_OFFSET;
  using Base::BK;
  using Base::C_BOX;
  using Base::MW;
  using Base::STAGE_BYTES;
  using Pipe = typename Base::Pipe;
  static constexpr int SHARED_ROWS = CDIM == 0 ? BN : BM;            // rows (m or n) of the shared slot
  static constexpr int SHARED_SLOT = CDIM == 0 ? B_SLOT : A_SLOT;    // bytes each full barrier gets of it
  static constexpr int OWN_SLOT = CDIM == 0 ? A_SLOT : B_SLOT;       // bytes of the operand not shared
  static constexpr unsigned short MASK = (1u << CLUSTER) - 1;        // every CTA of the cluster

  static_assert(CLUSTER == 2, "clusters of 2 CTAs (a cluster of 1 is hgemm_wgmma itself)");
  static_assert(CDIM == 0 || CDIM == 1, "pairs along M (0: B multicast) or along N (1: A multicast)");
  static_assert((SHARED_ROWS / 2) % 8 == 0, "a K-major half slot is whole 8-row swizzle atoms");
  static_assert((BK / 2) % 8 == 0, "an MN-major half chunk is whole 8-row swizzle atoms");

  // rank `rank`'s tile of pair `pair`: the grouped raster over the pair grid (pm_count x pn_count)
  static __device__ __forceinline__ void pair_tile(int pair, int rank, int pm_count, int pn_count, int& m0,
                                                   int& n0) {
    const int per_group = GROUP * pn_count;
    const int first_m = (pair / per_group) * GROUP;
    const int rows = min(pm_count - first_m, GROUP);
    const int r = pair % per_group;
    const int pm = first_m + r % rows, pn = r / rows;
    if constexpr (CDIM == 0) {
      m0 = (2 * pm + rank) * BM;
      n0 = pn * BN;
    } else {
      m0 = pm * BM;
      n0 = (2 * pn + rank) * BN;
    }
  }

  // rank `rank`'s half of the shared operand's slot (ROWS x BK from row r0, k k0), multicast to both CTAs
  template <int MN, int ROWS>
  static __device__ __forceinline__ void load_half(unsigned dst, const TensorMap* map, unsigned bar, int r0, int k0,
                                                   int rank) {
    if constexpr (MN) {
#pragma unroll
      for (int j = 0; j < ROWS / BK; ++j)
        tma_load_multicast(dst + j * BK * SWZ + rank * (BK / 2) * SWZ, map, bar, r0 + j * BK, k0 + rank * (BK / 2), MASK);
    } else {
      tma_load_multicast(dst + rank * (ROWS / 2) * SWZ, map, bar, k0, r0 + rank * (ROWS / 2), MASK);
    }
  }

  static __device__ void producer(const TensorMap* tmA, const TensorMap* tmB, unsigned ring, unsigned bars, int rank,
                                  int pm_count, int pn_count, int M, int N, int kslots) {
    tensormap_prefetch(tmA);
    tensormap_prefetch(tmB);
    const int pairs = pm_count * pn_count;
    const int clusters = cluster_reg_count();
    unsigned it = 0;
    for (int pair = cluster_reg_id(); pair < pairs; pair += clusters) {
      int m0, n0;
      pair_tile(pair, rank, pm_count, pn_count, m0, n0);
      const bool own = CDIM == 0 ? m0 < M : n0 < N;    // this CTA's tile lies inside C
      const unsigned bytes = SHARED_SLOT + (own ? OWN_SLOT : 0);
      // both CTAs' consumers are done with the slot; this CTA's own operand, and its half of the shared one
      Pipe::fill(it, ring, bars, 0, kslots, [&] { return bytes; }, [&, m0, n0](unsigned a, unsigned full, int kb) {
        const unsigned b = a + A_SLOT;
        const int k0 = kb * BK;
        if constexpr (CDIM == 0) {
          if (own) Base::template load<A_MN, BM>(a, tmA, full, m0, k0);
          load_half<B_MN, BN>(b, tmB, full, n0, k0, rank);
        } else {
          load_half<A_MN, BM>(a, tmA, full, m0, k0, rank);
          if (own) Base::template load<B_MN, BN>(b, tmB, full, n0, k0);
        }
      });
    }
  }

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars, int rank,
                                  int M, int N, int pm_count, int pn_count, int kslots) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, lane = t % 32;
    if (t == 0) tensormap_prefetch(tmC);
    const int pairs = pm_count * pn_count;
    const int clusters = cluster_reg_count();
    const unsigned my_c = cstage + wg * MW * (BN / 64) * C_BOX;
    const unsigned peer_bars = cluster_map(bars, rank ^ 1);     // the peer's barriers, same offsets
    // released to both producers: both write into the slot
    const auto release = [&](bool go, unsigned i) {
      if (go && lane == 0) {
        const unsigned prev = Pipe::last(i);
        mbar_arrive(bars + prev);
        mbar_arrive_remote(peer_bars + prev);
      }
    };
    float acc[MW][ACC];
    unsigned it = 0;
    for (int pair = cluster_reg_id(); pair < pairs; pair += clusters) {
      int m0, n0;
      pair_tile(pair, rank, pm_count, pn_count, m0, n0);
      zero(acc);
      Pipe::drain(it, ring, bars, kslots, [&](unsigned a, unsigned b) { Base::template mma<BN>(acc, a, b, wg * MW * 64); },
                  release);
      wgmma_wait<0>();
      release(true, it);
      Base::epilogue(acc, tmC, my_c, wg, t, t / 32, t % 32, M, N, m0, n0);
    }
    if (t == 0) bulk_wait_all();                   // the staging must outlive the stores' reads
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N, int K,
                             unsigned char* smem_raw) {
    if (cluster_reg_nctarank() != CLUSTER) __trap();    // launched without the cluster attribute
    // the same offsets in both CTAs: multicast writes and remote arrivals use this CTA's offsets
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * STAGE_BYTES, bars = base + BAR_OFFSET;
    const int rank = cluster_reg_ctarank();
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    const int pm_count = CDIM == 0 ? (tiles_m + 1) / 2 : tiles_m;
    const int pn_count = CDIM == 0 ? tiles_n : (tiles_n + 1) / 2;
    if (threadIdx.x == 0) Pipe::init(bars, CLUSTER * 4 * CONSUMERS);   // empty: every consumer warp of both
    cluster_sync_all();                            // both CTAs' barriers exist before anyone uses them
    roles<CONSUMERS>(
        [&] { if (threadIdx.x == 0) producer(tmA, tmB, ring, bars, rank, pm_count, pn_count, M, N, kslots); },
        [&] { consumer(tmC, ring, cstage, bars, rank, M, N, pm_count, pn_count, kslots); });
    cluster_sync_all();                            // the peer may still arrive on this CTA's barriers
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int CLUSTER,
          int CDIM>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_wgmma_cluster(const __grid_constant__ autosched_wgmma::TensorMap tmA, const __grid_constant__ autosched_wgmma::TensorMap tmB,
                    const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaCluster<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP, CLUSTER, CDIM>::run(
      &tmA, &tmB, &tmC, M, N, K, smem);
}

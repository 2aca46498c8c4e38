// Two consumer warpgroups on one 64-row tile of the wgmma + TMA GEMM (hgemm_wgmma.cuh), splitting
// K between them: the shape of cuBLAS's kernel on 128 x 4096 x 4096 (64 x 64 tiles, 384 threads),
// where hgemm_wgmma either leaves half the SMs idle (64 tiles of 128 rows) or gives each SM one
// consumer (128 tiles of 64 rows).  Here both consumers of a CTA issue wgmma on the same output
// tile, so the ring drains twice as fast while the grid still holds a tile per SM.
//
// Slot ownership: the ring's iteration counter `it` (one per k-block, running on across tiles)
// gives k-block `it` to consumer it % 2.  STAGES is even, so slot s = it % STAGES always belongs to
// consumer s % 2: each consumer waits on and releases only its own slots, in the order it uses
// them, and a full barrier's phase parity can never be read one use early (with an odd ring, a
// consumer could wait on a slot whose previous use, the other consumer's, had not been filled, and
// the parity of that older phase would pass its wait).  The empty barriers count 4 arrivals, lane
// 0 of each warp of the slot's one consumer.
//
// End of a tile: consumer 1 stores its FP32 accumulators to a scratch area in fragment order (float
// i of thread t at i * 128 + t: conflict-free, and consumer 0's thread t holds the same fragment
// positions), both meet at a named barrier, consumer 0 adds them, both meet again (the scratch is
// free for consumer 1's next tile), and consumer 0 runs hgemm_wgmma's epilogue (swizzled staging,
// TMA store) alone while consumer 1 starts its next tile.
//
// Kept in its own file so that hgemm_wgmma.cuh, whose hash keys every measurement of hgemm_wgmma,
// stays byte for byte what was measured.
#pragma once
#include "hgemm_wgmma.cuh"

namespace autosched_wgmma {

template <int BF16, int A_MN, int B_MN, int BN, int SWZ, int STAGES, int GROUP>
struct HgemmWgmmaKPair : HgemmWgmma<BF16, A_MN, B_MN, 64, BN, SWZ, STAGES, 1, GROUP> {
  using Base = HgemmWgmma<BF16, A_MN, B_MN, 64, BN, SWZ, STAGES, 1, GROUP>;
  using Base::A_SLOT;
  using Base::ACC;
  using Base::BK;
  using Base::C_BOX;
  using Base::C_BYTES;
  using Base::STAGE_BYTES;
  static constexpr int THREADS = 384;
  static constexpr int SCRATCH_OFFSET = STAGES * STAGE_BYTES + C_BYTES;
  static constexpr int SCRATCH_BYTES = 64 * BN * 4;         // consumer 1's accumulators
  static constexpr int BAR_OFFSET = SCRATCH_OFFSET + SCRATCH_BYTES;
  static constexpr int SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 1024;
  static constexpr int EPI_BAR = 1;                         // consumer 0's own (128 threads)
  static constexpr int PAIR_BAR = 2;                        // both consumers (256 threads)

  static_assert(STAGES % 2 == 0, "an even ring: slot s belongs to consumer s % 2 on every pass");
  // a consumer releases a slot only after issuing its next one: owning a single slot, it would wait
  // for that slot's refill while still holding it
  static_assert(STAGES >= 4, "two slots or more for each consumer");
  static_assert(SMEM_BYTES <= 232448, "shared memory: the H100's opt-in limit per block");

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned scratch,
                                  unsigned bars, int M, int N, int tiles_m, int tiles_n, int kslots) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    if (wg == 0 && t == 0) tensormap_acquire(tmC);
    const int tiles = tiles_m * tiles_n;
    float acc[ACC];
    unsigned it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int m0, n0;
      Base::tile_coords(tile, tiles_m, tiles_n, m0, n0);
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
      int held = -1;                               // this consumer's slot whose wgmma group may still read
      for (int kb = 0; kb < kslots; ++kb, ++it) {
        if ((int)(it & 1) != wg) continue;
        const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
        mbar_wait(bars + 8 * s, phase);
        __syncwarp();
        const unsigned a = ring + s * STAGE_BYTES, b = a + A_SLOT;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16)
          Wgmma<BN>::template mma<BF16, A_MN, B_MN>(acc, Base::template desc<A_MN>(a, 0, kk),
                                                     Base::template desc<B_MN>(b, 0, kk));
        wgmma_commit();
        wgmma_wait<1>();                           // this consumer's previous group has read its slot
        if (held >= 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + held));
        held = (int)s;
      }
      wgmma_wait<0>();
      if (held >= 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + held));

      if (wg == 1) {
#pragma unroll
        for (int i = 0; i < ACC; ++i)
          asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(scratch + (i * 128 + t) * 4), "f"(acc[i]) : "memory");
      }
      asm volatile("bar.sync %0, 256;\n" ::"n"(PAIR_BAR) : "memory");    // consumer 1's partial is there
      if (wg == 0) {
#pragma unroll
        for (int i = 0; i < ACC; ++i) {
          float x;
          asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(x) : "r"(scratch + (i * 128 + t) * 4) : "memory");
          acc[i] += x;
        }
      }
      asm volatile("bar.sync %0, 256;\n" ::"n"(PAIR_BAR) : "memory");    // ... and read: free for the next tile
      if (wg == 1) continue;

      // consumer 0: hgemm_wgmma's epilogue for one m64 block
      if (t == 0) bulk_wait_read_all();            // the last tile's store has read the staging
      asm volatile("bar.sync %0, 128;\n" ::"n"(EPI_BAR) : "memory");
#pragma unroll
      for (int i = 0; i < ACC; i += 2) {
        const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
        const int col = 8 * (i / 4) + 2 * (lane % 4);
        const int box = col / 64, unit = (col % 64) / 8;
        const unsigned dst = cstage + box * C_BOX + row * 128 + ((unit ^ (row % 8)) * 16) + (col % 8) * 2;
        unsigned packed;
        if constexpr (BF16) {
          __nv_bfloat162 v = __floats2bfloat162_rn(acc[i], acc[i + 1]);
          packed = *reinterpret_cast<unsigned*>(&v);
        } else {
          __half2 v = __floats2half2_rn(acc[i], acc[i + 1]);
          packed = *reinterpret_cast<unsigned*>(&v);
        }
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(packed) : "memory");
      }
      fence_async_smem();
      asm volatile("bar.sync %0, 128;\n" ::"n"(EPI_BAR) : "memory");
      if (t == 0) {
        if (m0 < M) {
#pragma unroll
          for (int box = 0; box < BN / 64; ++box)
            if (n0 + box * 64 < N) tma_store(tmC, cstage + box * C_BOX, n0 + box * 64, m0);
        }
        bulk_commit();
      }
    }
    if (wg == 0 && t == 0) bulk_wait_all();        // the staging must outlive the stores' reads
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N,
                             int K, unsigned char* smem_raw) {
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * STAGE_BYTES, scratch = base + SCRATCH_OFFSET;
    const unsigned bars = base + BAR_OFFSET;
    const int tiles_m = (M + 63) / 64, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(bars + 8 * s, 1);                // full: the producer's expect_tx
        mbar_init(bars + 8 * (STAGES + s), 4);     // empty: lane 0 of each warp of the slot's consumer
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      fence_async_smem();
    }
    __syncthreads();
    if (threadIdx.x < 128) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      if (threadIdx.x == 0) Base::producer(tmA, tmB, ring, bars, tiles_m, tiles_n, kslots);
    } else {
      asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
      consumer(tmC, ring, cstage, scratch, bars, M, N, tiles_m, tiles_n, kslots);
    }
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BN, int SWZ, int STAGES, int GROUP>
__global__ void __launch_bounds__(384, 1)
hgemm_wgmma_kpair(const autosched_wgmma::TensorMap* tmA, const autosched_wgmma::TensorMap* tmB,
                  const autosched_wgmma::TensorMap* tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaKPair<BF16, A_MN, B_MN, BN, SWZ, STAGES, GROUP>::run(tmA, tmB, tmC, M, N, K, smem);
}

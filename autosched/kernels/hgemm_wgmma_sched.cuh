// The wgmma + TMA GEMM of hgemm_wgmma.cuh with two knobs that its own kernel fixes: how its two
// consumer warpgroups share the tiles, and how much shared memory its epilogue stages through.  The
// same pipeline (Ring), loads, descriptors, raster and A's box rows as HgemmWgmma's, from an instance
// of 2 slots and 64 columns (HgemmWgmma's static_asserts count a whole-tile staging, which rules out
// the deeper rings this kernel is for); its own consumers and epilogue.
//
// PINGPONG = 0 (cooperative): both consumers work on every tile, each on BM / 2 of its rows, as
//   hgemm_wgmma's two consumers do; they reach their epilogues together, and the tensor cores idle
//   through each.
// PINGPONG = 1: each consumer owns whole BM x BN tiles (the CTA's j-th tile is consumer j % 2's, its
//   slots the ring's uses j kslots .. (j + 1) kslots - 1, the order the producer fills them in), and the
//   two take turns: while one runs its main loop the other converts and stores its last tile.
//   empty[s] then counts the 4 warps of one consumer, and order[c] (count 4: lane 0 of each warp of
//   consumer c) completes once consumer c has passed the full barrier of its tile's last slot.  A
//   consumer waits for the other's order barrier before its own tile's first slot.  That makes the
//   turns, and correctness needs it too: an mbarrier wait tests one parity bit, so a consumer that
//   waited on a full barrier two phases ahead (the other's slots not yet consumed) would pass at once.
//
// EPI_BOXES = 0: each consumer stages its whole share of the tile (BM / 2 or BM rows x BN) and stores
//   it after one barrier, as hgemm_wgmma does.  At 128 x 256 that is 64 KB of staging, which leaves
//   the ring 3 slots of 48 KB.
// EPI_BOXES = E > 0: each consumer stages one output box at a time through a ring of E boxes (8 KB
//   each at 64 x 64), a TMA store and a bulk commit group per box, so 128 x 256 keeps 4 slots.  Before it
//   rewrites a box, the consumer's storing thread waits until at most E - 1 of its groups are still
//   reading (a box wholly outside C still commits its, empty, group so that the count holds).
//
// BN = 168 beside hgemm_wgmma's 64-multiples (a K-major B only): its output boxes are 64 x 56, unswizzled
// (the host's C map says so), three to a row of the tile.  Its slots, (BM + 168) x SWZ bytes, are whole
// swizzle atoms (8 x SWZ bytes) apart, so each slot still starts on its swizzle pattern's boundary.
#pragma once
#include "hgemm_wgmma.cuh"

namespace autosched_wgmma {

template <int N>
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory"); }

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int GROUP, int PINGPONG, int EPI_BOXES>
struct HgemmWgmmaSched {
  // hgemm_wgmma's geometry at this BM and consumer split: its raster (whose column index is scaled to
  // BN here), descriptors and A's box rows, from its 2-slot, 64-column instance (whose static_asserts, a
  // whole-tile staging counted, hold wherever this kernel's do; BN = 168 is no value of its own)
  using Base = HgemmWgmma<BF16, A_MN, B_MN, BM, 64, SWZ, 2, PINGPONG ? 1 : 2, GROUP>;
  static constexpr int BK = Base::BK;
  static constexpr int MW = PINGPONG ? BM / 64 : BM / 128;   // m64 blocks a consumer runs
  static constexpr int ACC = BN / 2;
  static constexpr int THREADS = 384;
  static constexpr int B_SLOT = BN * SWZ;
  static constexpr int STAGE_BYTES = Base::A_SLOT + B_SLOT;
  // output boxes: 64 x 64 in the 128B-swizzled layout, or where BN is no multiple of 64 (168),
  // 64 rows x 56 columns unswizzled (112-byte rows: the 8 rows a warp's store touches fall in distinct
  // banks, 28 words apart)
  static constexpr int CW = BN % 64 == 0 ? 64 : 56;
  static constexpr int C_BOX = 64 * CW * 2;
  static constexpr int NBOX = MW * (BN / CW);                // output boxes of a consumer's share
  static constexpr int ROUNDS = EPI_BOXES ? NBOX : 1;        // stagings of one epilogue
  static constexpr int PER_ROUND = EPI_BOXES ? 1 : NBOX;     // boxes a staging holds
  static constexpr int BUFS = EPI_BOXES ? EPI_BOXES : 1;
  static constexpr int C_CONSUMER = BUFS * PER_ROUND * C_BOX;
  static constexpr int BAR_OFFSET = STAGES * STAGE_BYTES + 2 * C_CONSUMER;
  // full and empty per slot, order per consumer; + 1024 to align the base to the swizzle atom
  static constexpr int SMEM_BYTES = BAR_OFFSET + (2 * STAGES + 2) * 8 + 1024;

  static_assert(PINGPONG == 0 || PINGPONG == 1, "cooperative (0) or ping-pong (1) consumers");
  static_assert(BN == 64 || BN == 128 || BN == 168 || BN == 192 || BN == 256, "a wgmma N of this file");
  static_assert(B_MN == 0 || BN % BK == 0, "an MN-major B: BN whole K slices wide (its TMA boxes)");
  static_assert(PINGPONG ? (BM == 64 || BM == 128) : (BM == 128 || BM == 256),
                "a consumer runs 1 or 2 m64 blocks: BM = 64 or 128 ping-pong, 128 or 256 cooperative");
  static_assert(MW * ACC <= 128, "accumulators: MW x BN / 2 <= 128 floats a consumer thread");
  static_assert(EPI_BOXES >= 0 && EPI_BOXES <= 4, "a whole share (0) or a ring of 1 to 4 boxes");
  static_assert(SMEM_BYTES <= 232448, "shared memory: the H100's opt-in limit per block");

  static __device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int M, int& m0, int& n0) {
    Base::tile_coords(tile, tiles_m, tiles_n, M, m0, n0);
    n0 = n0 / 64 * BN;
  }

  using Pipe = Ring<STAGES, STAGE_BYTES, Base::A_SLOT>;

  // HgemmWgmma::producer over this kernel's STAGES slots and BN
  static __device__ void producer(const TensorMap* tmA, const TensorMap* tmB, unsigned ring, unsigned bars,
                                  int M, int tiles_m, int tiles_n, int kslots) {
    tensormap_prefetch(tmA);
    tensormap_prefetch(tmB);
    const int tiles = tiles_m * tiles_n;
    const unsigned expect = B_SLOT + Base::a_rows(M) * SWZ;
    unsigned it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int m0, n0;
      tile_coords(tile, tiles_m, tiles_n, M, m0, n0);
      Pipe::fill(it, ring, bars, 0, kslots, [&] { return expect; }, [&, m0, n0](unsigned a, unsigned full, int kb) {
        const unsigned b = a + Base::A_SLOT;
        const int k0 = kb * BK;
        Base::template load<A_MN, BM>(a, tmA, full, m0, k0);
        Base::template load<B_MN, BN>(b, tmB, full, n0, k0);
      });
    }
  }

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars,
                                  int M, int N, int tiles_m, int tiles_n, int kslots) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    if (t == 0) tensormap_prefetch(tmC);
    const int tiles = tiles_m * tiles_n;
    const unsigned my_c = cstage + wg * C_CONSUMER;
    const int row_base = PINGPONG ? 0 : wg * MW * 64;       // this consumer's rows of the tile
    const unsigned order_mine = bars + 8 * (2 * STAGES + wg), order_other = bars + 8 * (2 * STAGES + 1 - wg);
    float acc[MW][ACC];
    int round = 0;                                           // stagings so far: which buffer is next
    for (int j = PINGPONG ? wg : 0; blockIdx.x + j * gridDim.x < tiles; j += PINGPONG ? 2 : 1) {
      int m0, n0;
      tile_coords(blockIdx.x + j * gridDim.x, tiles_m, tiles_n, M, m0, n0);
      zero(acc);
      // the other consumer has passed every full barrier of tile j - 1: its ((j - 1) / 2)-th turn
      if (PINGPONG && j > 0) mbar_wait(order_other, ((j - 1) / 2) & 1);
      unsigned it = j * kslots;
      Pipe::drain(it, ring, bars, kslots, [&](unsigned a, unsigned b) { Base::template mma<BN>(acc, a, b, row_base); },
                  [&](bool go, unsigned i) { if (go && lane == 0) mbar_arrive(bars + Pipe::last(i)); });
      if (PINGPONG && lane == 0) mbar_arrive(order_mine);   // the other consumer's turn at the ring
      wgmma_wait<0>();
      if (lane == 0) mbar_arrive(bars + Pipe::last(it));

      // epilogue: registers -> swizzled staging -> TMA stores, in ROUNDS stagings of PER_ROUND boxes
#pragma unroll
      for (int r = 0; r < ROUNDS; ++r, ++round) {
        const unsigned buf = my_c + (round % BUFS) * PER_ROUND * C_BOX;
        if (t == 0) bulk_wait_read<BUFS - 1>();    // the store that last read this buffer is done
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
#pragma unroll
        for (int q = 0; q < PER_ROUND; ++q) {
          const int bx = r * PER_ROUND + q, w = bx / (BN / CW), box = bx % (BN / CW);
#pragma unroll
          for (int i = box * CW / 2; i < (box + 1) * CW / 2; i += 2) {   // box = accumulator i / (CW / 2)
            const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
            const int col = 8 * (i / 4) + 2 * (lane % 4) - box * CW, unit = col / 8;   // within the box
            const unsigned dst = buf + q * C_BOX +
                                 (CW == 64 ? row * 128 + ((unit ^ (row % 8)) * 16) + (col % 8) * 2 : (row * CW + col) * 2);
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(pack_pair<BF16>(acc[w][i], acc[w][i + 1]))
                         : "memory");
          }
        }
        fence_async_smem();
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
        if (t == 0) {
#pragma unroll
          for (int q = 0; q < PER_ROUND; ++q) {
            const int bx = r * PER_ROUND + q, w = bx / (BN / CW), box = bx % (BN / CW);
            const int row0 = m0 + row_base + w * 64, col0 = n0 + box * CW;
            if (row0 < M && col0 < N) tma_store(tmC, buf + q * C_BOX, col0, row0);
          }
          bulk_commit();
        }
      }
    }
    if (t == 0) bulk_wait_all();
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N,
                             int K, unsigned char* smem_raw) {
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * STAGE_BYTES, bars = base + BAR_OFFSET;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    // empty: lane 0 of each warp reading the slot; then order[0], order[1] (ping-pong only)
    if (threadIdx.x == 0) Pipe::template init<2>(bars, PINGPONG ? 4 : 8);
    __syncthreads();
    roles<2>([&] { if (threadIdx.x == 0) producer(tmA, tmB, ring, bars, M, tiles_m, tiles_n, kslots); },
             [&] { consumer(tmC, ring, cstage, bars, M, N, tiles_m, tiles_n, kslots); });
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int GROUP, int PINGPONG, int EPI_BOXES>
__global__ void __launch_bounds__(384, 1)
hgemm_wgmma_sched(const __grid_constant__ autosched_wgmma::TensorMap tmA,
                  const __grid_constant__ autosched_wgmma::TensorMap tmB,
                  const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaSched<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, GROUP, PINGPONG, EPI_BOXES>::run(
      &tmA, &tmB, &tmC, M, N, K, smem);
}

// FP16 / BF16 GEMM with the operands' roles swapped for few rows (sm_90a): C (M, N) row-major = X . W^T,
// X stored (M, K) (the tokens), W stored (N, K) (a linear layer's weight), both K-major, computed as
// C^T = W . X^T: the weight rows are wgmma's M side (BW a tile: 64 or 128, m64 blocks of one consumer
// warpgroup) and the tokens its N side (BT a tile: 8 to 128 in steps of wgmma's N).
//
// Why: at a few dozen to a few hundred rows the tokens fill a 64-row m64 block poorly and make few tiles;
// with the weight on the M side a tile is as narrow along the tokens as wgmma allows (N = 8 k), so
// a 768 x 768 weight at M = 112 makes 60 CTAs of 64 x 24 where 64 x 64 tiles of the usual roles make 24
// (cuBLAS runs nvjet_sm90_hsh_64x24_64x16_2x4_h_bz_TNT there, the TNT marking the transposed output;
// checks/cublas-kernels-2026-11-27.json).  The price: each W tile is read once per token tile.
//
// Design: hgemm_wgmma's (one producer thread of TMA loads into an mbarrier ring, a persistent grid),
// with one consumer warpgroup (no setmaxnreg: 256 threads hold their registers) and no raster group:
// tiles are walked token tile fastest, so the CTAs that read one W tile run side by side.  The
// epilogue writes the accumulators transposed (a thread's values of one weight row lie in C columns 8
// apart) into BT x 64 output boxes in the 128B-swizzled layout, one 16-bit store each: the four token
// columns a warp's store touches land in four distinct 16-byte units (the swizzle XORs the unit with
// the row), so the stores are conflict-free; TMA stores the boxes (clipped at M and N).
//
// Split-K (SPLIT_K 2 to 8; 1 is none): the persistent grid walks work units u = tile * SPLIT_K + slice,
// so a GEMM with few tiles and a long K (BERT's 768 x 3072 at M = 160: 24 tiles of 64 x 80 for 132
// SMs, each streaming 48 k-blocks through one SM) spreads its K over more SMs; the slices meet in a
// workspace of tile counters and FP32 partials (splitk_reduce.cuh), and the last to finish stores C.
// cuBLAS runs split-K kernels of this layout there at M <= 80 (checks/cublas-kernels-2026-11-27.json).
//
// Or the slices meet in shared memory (CLUSTER = 1, hgemm_wgmma_swap_cluster): a tile's SPLIT_K slices run
// as one thread-block cluster (compile-time dims SPLIT_K x 1 x 1; the grid is every work unit, one a CTA,
// so the producer loads nothing after the unit's last and the ring is free once consumed), each but
// rank 0 leaves its FP32 accumulators in its own ring in splitk_reduce.cuh's fragment order, and rank 0
// adds them over DSMEM (ld.shared::cluster) and stores C.
// Why: the workspace's chain after the main loop (partial stores, a gpu-scope fence, the counter's
// atomic, a second fence, the partials' L2 reads) is a serial tail of about a microsecond, where the
// kernel takes 10-12 us (768 x 3072 at M = 80-192); a cluster barrier and DSMEM reads are a few hundred
// cycles.  No workspace.
//
// Accumulator fragment of m64nBTk16 (warp w, lane l, register i < BT / 2): weight row
// 16 w + l / 4 + 8 ((i / 2) % 2) of the m64 block, token 8 (i / 4) + 2 (l % 4) + i % 2.
#pragma once
#include "hgemm_wgmma.cuh"

namespace autosched_wgmma {

template <int BF16, int BW, int BT, int SWZ, int STAGES, int SPLIT_K, int CLUSTER>
struct HgemmWgmmaSwap {
  static constexpr int BK = SWZ / 2;                        // elements of K a slot holds
  static constexpr int MW = BW / 64;                        // m64 blocks (of weight rows) a tile holds
  static constexpr int THREADS = 256;                       // a producer warpgroup, one consumer
  static constexpr int W_SLOT = BW * SWZ;
  static constexpr int X_SLOT = BT * SWZ;
  static constexpr int STAGE_BYTES = W_SLOT + X_SLOT;       // what each full barrier expects
  static constexpr int C_BOX = BT * 128;                    // BT tokens x 64 weight columns, 128B-swizzled
  static constexpr int C_BYTES = MW * C_BOX;
  // the staging starts on a 1024-byte boundary (the 128B swizzle's atom), which a ring of 64B swizzle
  // and BW + BT no multiple of 16 rows does not end on
  static constexpr int C_OFFSET = (STAGES * STAGE_BYTES + 1023) / 1024 * 1024;
  static constexpr int BAR_OFFSET = C_OFFSET + C_BYTES;
  static constexpr int SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 1024;
  static constexpr int ACC = BT / 2;
  using Reduce = SplitKReduce<SPLIT_K, 128, MW * ACC / 4, 2>;   // named barrier 2: 1 is the epilogue's

  static_assert(SWZ == 32 || SWZ == 64 || SWZ == 128, "swizzle 32, 64 or 128 bytes");
  static_assert(BW == 64 || BW == 128, "BW = 64 or 128 weight rows: one or two m64 blocks");
  static_assert(BT == 8 || BT == 16 || BT == 24 || BT == 32 || BT == 40 || BT == 48 || BT == 56 || BT == 64 ||
                BT == 80 || BT == 96 || BT == 128, "a wgmma N of this file");
  static_assert(MW * ACC <= 128, "accumulators: MW x BT / 2 <= 128 floats a consumer thread");
  static_assert(STAGES >= 2 && STAGES <= 16, "a ring of 2 to 16 slots");
  static_assert(SPLIT_K >= 1 && SPLIT_K <= 8, "1 to 8 K slices");
  static_assert(SMEM_BYTES <= 232448, "shared memory: the H100's opt-in limit per block");
  static_assert(!CLUSTER || (SPLIT_K >= 2 && STAGES * STAGE_BYTES >= MW * ACC * 128 * 4),
                "a cluster reduction: 2 to 8 slices, the ring holds a slice's FP32 accumulators");

  using Pipe = Ring<STAGES, STAGE_BYTES, W_SLOT>;

  // CLUSTER: rank 0 of the tile's cluster adds the other ranks' accumulators, which each left in its
  // ring (float4 j of consumer thread ct at j * 128 + ct), read over DSMEM.  Every thread of every CTA
  // passes the two cluster barriers (the producer warpgroup's after its loop, in run): the first
  // publishes the partials, the second keeps each CTA's shared memory alive until rank 0 has read it.
  static __device__ __forceinline__ bool cluster_reduce(float* acc, unsigned ring, int ct) {
    constexpr int NV = MW * ACC / 4;
    const unsigned rank = cluster_reg_ctarank();
    if (rank != 0) {
      // every consumer warp past its last wgmma (their reads of the ring) before any overwrites it
      asm volatile("bar.sync 1, 128;\n" ::: "memory");
#pragma unroll
      for (int j = 0; j < NV; ++j)
        asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(ring + (j * 128 + ct) * 16),
                     "f"(acc[4 * j]), "f"(acc[4 * j + 1]), "f"(acc[4 * j + 2]), "f"(acc[4 * j + 3]) : "memory");
    }
    cluster_sync_all();
    if (rank == 0) {
#pragma unroll 1
      for (int r = 1; r < SPLIT_K; ++r) {
        const unsigned peer = cluster_map(ring + ct * 16, r);
#pragma unroll
        for (int j = 0; j < NV; ++j) {
          float x, y, z, w;
          asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                       : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "r"(peer + j * 128 * 16) : "memory");
          acc[4 * j] += x;
          acc[4 * j + 1] += y;
          acc[4 * j + 2] += z;
          acc[4 * j + 3] += w;
        }
      }
    }
    cluster_sync_all();
    return rank == 0;
  }

  // Work unit u = (W tile, token tile, K slice), token tile fastest: the CTAs of one W tile are
  // neighbours in the grid; `tile` numbers (W tile, token tile) as the workspace's counters do; `own`:
  // the W tile lies inside N (always, as the grid is walked; the test is kept for the code it makes)
  struct Unit {
    int w0, t0, tile, slice;
    bool own;
  };
  static __device__ __forceinline__ Unit unit(int u, int tiles_w, int tiles_t) {
    const int g = u / SPLIT_K, wt = g / tiles_t;
    return {wt * BW, (g % tiles_t) * BT, wt * tiles_t + g % tiles_t, u % SPLIT_K, wt < tiles_w};
  }
  static __device__ __forceinline__ int units(int tiles_w, int tiles_t) { return tiles_w * tiles_t * SPLIT_K; }

  static __device__ void producer(const TensorMap* tmX, const TensorMap* tmW, unsigned ring, unsigned bars,
                                  int tiles_w, int tiles_t, int kslots) {
    tensormap_prefetch(tmX);
    tensormap_prefetch(tmW);
    unsigned it = 0;
    for (int u = blockIdx.x; u < units(tiles_w, tiles_t); u += gridDim.x) {
      const Unit un = unit(u, tiles_w, tiles_t);
      int kb0, nk;
      Reduce::slice_range(un.slice, kslots, kb0, nk);
      // whole boxes, zero-filled past M, N or K
      const bool own = un.own;
      Pipe::fill(it, ring, bars, kb0, nk, [&] { return own ? STAGE_BYTES : X_SLOT; },
                 [&](unsigned w, unsigned full, int kb) {
                   if (own) tma_load(w, tmW, full, kb * BK, un.w0);
                   tma_load(w + W_SLOT, tmX, full, kb * BK, un.t0);
                 });
    }
  }

  // a K-major operand's descriptor at row `r0` and k step `kk` of a slot (hgemm_wgmma's layout)
  static __device__ __forceinline__ unsigned long long desc(unsigned slot, int r0, int kk) {
    return make_desc<SWZ>(slot + r0 * SWZ + kk * 2, 16, 8 * SWZ);
  }

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars,
                                  int M, int N, int tiles_w, int tiles_t, int kslots, unsigned char* ws) {
    const int t = threadIdx.x - 128, warp = t / 32, lane = t % 32;
    if (t == 0) tensormap_prefetch(tmC);
    // the consumer warpgroup is done with a slot: lane 0 of each warp arrives (count 4)
    const auto release = [&](bool go, unsigned i) {
      if (go) {
        const unsigned empty = bars + Pipe::last(i);
        if (lane == 0) mbar_arrive(empty);
      }
    };
    float acc[MW][ACC];
    unsigned it = 0;
    for (int u = blockIdx.x; u < units(tiles_w, tiles_t); u += gridDim.x) {
      const Unit un = unit(u, tiles_w, tiles_t);
      const int w0 = un.w0, t0 = un.t0;
      int kb0, nk;
      Reduce::slice_range(un.slice, kslots, kb0, nk);
      zero(acc);
      Pipe::drain(it, ring, bars, nk, [&](unsigned wslot, unsigned xslot) {
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
          const unsigned long long dx = desc(xslot, 0, kk);
#pragma unroll
          for (int w = 0; w < MW; ++w) Wgmma<BT>::template mma<BF16, 0, 0>(acc[w], desc(wslot, w * 64, kk), dx);
        }
      }, release);
      // unconditional, as in hgemm_wgmma.cuh: a wgmma wait under a branch serializes every wgmma
      wgmma_wait<0>();
      release(nk > 0, it);
      if (!un.own) continue;
      if constexpr (CLUSTER) {
        if (!cluster_reduce(&acc[0][0], ring, t)) continue;                   // rank 0 stores C
      } else if constexpr (SPLIT_K > 1) {
        if (!Reduce::reduce(&acc[0][0], ws, tiles_w * tiles_t, un.tile, un.slice, t)) continue;   // another slice stores C
      }

      // epilogue: registers -> transposed, swizzled staging -> TMA store
      if (t == 0) bulk_wait_read_all();              // the last tile's stores have read the staging
      asm volatile("bar.sync 1, 128;\n" ::: "memory");
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; ++i) {
          const int r = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);     // weight row within the m64 block
          const int c = 8 * (i / 4) + 2 * (lane % 4) + i % 2;         // token within the tile
          const unsigned dst = cstage + w * C_BOX + c * 128 + (((r / 8) ^ (c % 8)) * 16) + (r % 8) * 2;
          unsigned short bits;
          if constexpr (BF16) {
            __nv_bfloat16 v = __float2bfloat16_rn(acc[w][i]);
            bits = *reinterpret_cast<unsigned short*>(&v);
          } else {
            __half v = __float2half_rn(acc[w][i]);
            bits = *reinterpret_cast<unsigned short*>(&v);
          }
          asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(dst), "h"(bits) : "memory");
        }
      fence_async_smem();
      asm volatile("bar.sync 1, 128;\n" ::: "memory");
      if (t == 0) {
#pragma unroll
        for (int w = 0; w < MW; ++w)
          if (w0 + w * 64 < N) tma_store(tmC, cstage + w * C_BOX, w0 + w * 64, t0);
        bulk_commit();
      }
    }
    // the staging must outlive the stores' reads of it; the grid's completion orders their writes (as in
    // hgemm_wgmma_splitk.cuh, where waiting for the writes too cost short split-K GEMMs 0.5-0.7 us)
    if (t == 0) bulk_wait_read_all();
  }

  static __device__ void run(const TensorMap* tmX, const TensorMap* tmW, const TensorMap* tmC, int M, int N,
                             int K, unsigned char* ws, unsigned char* smem_raw) {
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + C_OFFSET, bars = base + BAR_OFFSET;
    const int tiles_w = (N + BW - 1) / BW, tiles_t = (M + BT - 1) / BT, kslots = (K + BK - 1) / BK;
    if (threadIdx.x == 0) Pipe::init(bars, 4);      // empty: lane 0 of each consumer warp
    __syncthreads();
    roles<1>(
        [&] {
          if (threadIdx.x == 0) producer(tmX, tmW, ring, bars, tiles_w, tiles_t, kslots);
          if constexpr (CLUSTER) {                   // the consumers' two cluster barriers (one work unit)
            cluster_sync_all();
            cluster_sync_all();
          }
        },
        [&] { consumer(tmC, ring, cstage, bars, M, N, tiles_w, tiles_t, kslots, ws); });
  }
};

}  // namespace autosched_wgmma

// workspace: tile counters and FP32 partials (splitk_reduce.cuh); unread at SPLIT_K = 1
template <int BF16, int BW, int BT, int SWZ, int STAGES, int SPLIT_K>
__global__ void __launch_bounds__(256, 1)
hgemm_wgmma_swap(const __grid_constant__ autosched_wgmma::TensorMap tmX,
                 const __grid_constant__ autosched_wgmma::TensorMap tmW,
                 const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K,
                 unsigned char* workspace) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaSwap<BF16, BW, BT, SWZ, STAGES, SPLIT_K, 0>::run(&tmX, &tmW, &tmC, M, N, K, workspace, smem);
}

// the slices of a tile as one cluster, summed over DSMEM; a CTA a work unit (the grid is every unit);
// the workspace argument is unread (the launch is hgemm_wgmma_swap's)
template <int BF16, int BW, int BT, int SWZ, int STAGES, int SPLIT_K>
__global__ void __cluster_dims__(SPLIT_K, 1, 1) __launch_bounds__(256, 1)
hgemm_wgmma_swap_cluster(const __grid_constant__ autosched_wgmma::TensorMap tmX,
                         const __grid_constant__ autosched_wgmma::TensorMap tmW,
                         const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K,
                         unsigned char* workspace) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaSwap<BF16, BW, BT, SWZ, STAGES, SPLIT_K, 1>::run(&tmX, &tmW, &tmC, M, N, K, workspace, smem);
}

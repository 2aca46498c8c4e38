// Split-K for the wgmma + TMA GEMM of hgemm_wgmma.cuh: the same producer and consumer warpgroups,
// mbarrier ring and TMA-store epilogue, but the persistent grid walks work units (output tile,
// K slice), so that a GEMM with few output tiles and a long K (128 prefill rows: 64 tiles of
// 128 x 64 for 132 SMs) still fills the GPU.  Its template (templates/hgemm_wgmma_splitk.py)
// renders SPLIT_K 2, 3, 4, 6 and 8 (deep splits stream a skinny GEMM's weights through more SMs):
// one slice is hgemm_wgmma itself.  This kernel lives in its own file so
// that hgemm_wgmma.cuh, whose hash is the build id every measurement of hgemm_wgmma is keyed by,
// stays byte for byte what was measured.
//
// Work units: u = tile * SPLIT_K + slice, walked u = blockIdx.x; u += gridDim.x by every role, so
// the slices of one tile run side by side on neighbouring CTAs (they finish together, and their
// partials are still in L2 when the last one sums them).  Of the ceil(K / BK) = q * SPLIT_K + r
// k-blocks, slice s holds q + (s < r) starting at s * q + min(s, r).  A slice with none (K shorter
// than SPLIT_K k-blocks: the template never renders that) adds zeros and still signals.
//
// Serial reduction in one launch; no CTA ever waits for another, so nothing assumes the CTAs of a
// tile are resident together:
//   1. every consumer thread stores its FP32 accumulators to partials[slice][tile] in fragment
//      order (float4 j of consumer thread c at j * CT + c: coalesced; the thread that reads it
//      back holds the same fragment positions in another CTA, so rows and columns never appear);
//   2. release: each thread fences at gpu scope, the consumer threads meet at a named barrier
//      (the producer warpgroup is elsewhere, so never __syncthreads), and one thread adds 1 to
//      counters[tile] with an acq_rel atomic;
//   3. the CTA whose add returns SPLIT_K - 1 is the tile's last: its thread resets the counter to
//      0 (every slice has arrived, so nobody touches it again in this launch, and the next launch
//      is stream-ordered after this one: no memset between launches), the verdict reaches the other
//      consumer threads through bar.red.or, they fence (acquire) and add the other slices'
//      partials with ld.global.cg (L2, never a stale L1 line), then run the usual epilogue.  The
//      other CTAs go on to their next unit.
// The last CTA's own partial is stored for nothing: it cannot know it is last before it signals.
//
// Workspace (ArgSpec role "workspace", allocated zeroed once by the launcher): counters, one u32
// per tile padded to 256 bytes, then partials (SPLIT_K, tiles, BM x BN) floats.
#pragma once
#include "hgemm_wgmma.cuh"

namespace autosched_wgmma {

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int SPLIT_K>
struct HgemmWgmmaSplitK : HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP> {
  using Base = HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP>;
  using Base::A_SLOT;
  using Base::ACC;
  using Base::BAR_OFFSET;
  using Base::BK;
  using Base::C_BOX;
  using Base::MW;
  using Base::STAGE_BYTES;
  static constexpr int CT = 128 * CONSUMERS;               // consumer threads
  static constexpr int VEC = MW * ACC / 4;                  // float4s of accumulators a consumer thread
  static constexpr int TILE_VEC = BM * BN / 4;              // float4s of one tile's partial
  static constexpr int REDUCE_BAR = 3;                      // all consumers (1 and 2: one warpgroup each)

  static_assert(SPLIT_K >= 2 && SPLIT_K <= 8, "split-K into 2 to 8 slices (1 is hgemm_wgmma itself)");
  static_assert(VEC * CT == TILE_VEC, "the consumers' fragments cover the tile once");

  static __device__ __forceinline__ float4* partial(unsigned char* ws, int tiles, int slice, int tile) {
    const size_t counter_bytes = ((size_t)tiles * 4 + 255) / 256 * 256;
    return reinterpret_cast<float4*>(ws + counter_bytes) + ((size_t)slice * tiles + tile) * TILE_VEC;
  }

  static __device__ __forceinline__ void slice_range(int slice, int kslots, int& kb0, int& nk) {
    const int q = kslots / SPLIT_K, r = kslots % SPLIT_K;
    kb0 = slice * q + min(slice, r);
    nk = q + (slice < r);
  }

  static __device__ void producer(const TensorMap* tmA, const TensorMap* tmB, unsigned ring, unsigned bars,
                                  int M, int tiles_m, int tiles_n, int kslots) {
    tensormap_prefetch(tmA);
    tensormap_prefetch(tmB);
    const int units = tiles_m * tiles_n * SPLIT_K;
    unsigned it = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      int m0, n0, kb0, nk;
      Base::tile_coords(u / SPLIT_K, tiles_m, tiles_n, M, m0, n0);
      slice_range(u % SPLIT_K, kslots, kb0, nk);
      for (int kb = kb0; kb < kb0 + nk; ++kb, ++it) {
        const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
        const unsigned full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
        mbar_wait(empty, phase ^ 1);
        mbar_expect_tx(full, Base::B_SLOT + Base::a_rows(M) * SWZ);   // hgemm_wgmma's A rows
        const unsigned a = ring + s * STAGE_BYTES, b = a + A_SLOT;
        const int k0 = kb * BK;
        if constexpr (A_MN) {
#pragma unroll
          for (int j = 0; j < BM / BK; ++j) tma_load(a + j * BK * SWZ, tmA, full, m0 + j * BK, k0);
        } else {
          tma_load(a, tmA, full, k0, m0);
        }
        if constexpr (B_MN) {
#pragma unroll
          for (int j = 0; j < BN / BK; ++j) tma_load(b + j * BK * SWZ, tmB, full, n0 + j * BK, k0);
        } else {
          tma_load(b, tmB, full, k0, n0);
        }
      }
    }
  }

  // true: this CTA finished the tile's last slice and `acc` holds the sum of all of them
  static __device__ __forceinline__ bool reduce(float (&acc)[MW][ACC], unsigned char* ws, int tiles, int tile,
                                                int slice, int ct) {
    float4* mine = partial(ws, tiles, slice, tile) + ct;
#pragma unroll
    for (int w = 0; w < MW; ++w)
#pragma unroll
      for (int i = 0; i < ACC; i += 4)
        __stcg(mine + (w * ACC + i) / 4 * CT, make_float4(acc[w][i], acc[w][i + 1], acc[w][i + 2], acc[w][i + 3]));
    __threadfence();
    asm volatile("bar.sync %0, %1;\n" ::"n"(REDUCE_BAR), "n"(CT) : "memory");
    unsigned last = 0;
    if (ct == 0) {
      unsigned* counter = reinterpret_cast<unsigned*>(ws) + tile;
      unsigned before;
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(before) : "l"(counter) : "memory");
      last = before == SPLIT_K - 1;
      if (last) asm volatile("st.relaxed.gpu.global.u32 [%0], 0;\n" ::"l"(counter) : "memory");
    }
    __syncwarp();                                  // bar.red is .aligned
    asm volatile("{\n.reg .pred p, q;\nsetp.ne.u32 q, %1, 0;\nbar.red.or.pred p, %2, %3, q;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(last) : "r"(last), "n"(REDUCE_BAR), "n"(CT) : "memory");
    if (!last) return false;
    __threadfence();
#pragma unroll 1
    for (int s = 0; s < SPLIT_K; ++s) {
      if (s == slice) continue;
      const float4* other = partial(ws, tiles, s, tile) + ct;
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; i += 4) {
          const float4 v = __ldcg(other + (w * ACC + i) / 4 * CT);
          acc[w][i] += v.x;
          acc[w][i + 1] += v.y;
          acc[w][i + 2] += v.z;
          acc[w][i + 3] += v.w;
        }
    }
    return true;
  }

  // hgemm_wgmma's epilogue, unchanged: registers -> 128B-swizzled staging -> TMA stores
  static __device__ __forceinline__ void epilogue(const float (&acc)[MW][ACC], const TensorMap* tmC, unsigned my_c,
                                                  int wg, int t, int M, int N, int m0, int n0) {
    const int warp = t / 32, lane = t % 32;
    if (t == 0) bulk_wait_read_all();
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
#pragma unroll
    for (int w = 0; w < MW; ++w)
#pragma unroll
      for (int i = 0; i < ACC; i += 2) {
        const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
        const int col = 8 * (i / 4) + 2 * (lane % 4);
        const int box = col / 64, unit = (col % 64) / 8;
        const unsigned dst = my_c + (w * (BN / 64) + box) * C_BOX + row * 128 + ((unit ^ (row % 8)) * 16) + (col % 8) * 2;
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
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
    if (t == 0) {
#pragma unroll
      for (int w = 0; w < MW; ++w) {
        const int row0 = m0 + (wg * MW + w) * 64;
        if (row0 >= M) continue;
#pragma unroll
        for (int box = 0; box < BN / 64; ++box)
          if (n0 + box * 64 < N) tma_store(tmC, my_c + (w * (BN / 64) + box) * C_BOX, n0 + box * 64, row0);
      }
      bulk_commit();
    }
  }

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars, int M, int N,
                                  int tiles_m, int tiles_n, int kslots, unsigned char* ws) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, lane = t % 32, ct = threadIdx.x - 128;
    if (t == 0) tensormap_prefetch(tmC);
    const int tiles = tiles_m * tiles_n, units = tiles * SPLIT_K;
    const unsigned my_c = cstage + wg * MW * (BN / 64) * C_BOX;
    float acc[MW][ACC];
    unsigned it = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      const int tile = u / SPLIT_K, slice = u % SPLIT_K;
      int m0, n0, kb0, nk;
      Base::tile_coords(tile, tiles_m, tiles_n, M, m0, n0);
      slice_range(slice, kslots, kb0, nk);
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[w][i] = 0.0f;
      for (int kb = 0; kb < nk; ++kb, ++it) {
        const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
        mbar_wait(bars + 8 * s, phase);
        __syncwarp();
        const unsigned a = ring + s * STAGE_BYTES, b = a + A_SLOT;
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
          const unsigned long long db = Base::template desc<B_MN>(b, 0, kk);
#pragma unroll
          for (int w = 0; w < MW; ++w)
            Wgmma<BN>::template mma<BF16, A_MN, B_MN>(acc[w], Base::template desc<A_MN>(a, (wg * MW + w) * 64, kk), db);
        }
        wgmma_commit();
        wgmma_wait<1>();
        if (kb > 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
      }
      // unconditional even for an empty slice: a wgmma wait under a branch makes ptxas serialize
      // every wgmma of the kernel (C7518, seen on all 479 kernels before)
      wgmma_wait<0>();
      if (nk > 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
      if (reduce(acc, ws, tiles, tile, slice, ct)) epilogue(acc, tmC, my_c, wg, t, M, N, m0, n0);
    }
    // the staging must outlive the stores' reads of it; the grid's completion orders their writes
    // (waiting for the writes too cost short split-K GEMMs 0.5-0.7 us, H100, 2026-11-26,
    // scripts/experiments/wgmma_exit_wait.py)
    if (t == 0) bulk_wait_read_all();
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N, int K,
                             unsigned char* ws, unsigned char* smem_raw) {
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * STAGE_BYTES, bars = base + BAR_OFFSET;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(bars + 8 * s, 1);
        mbar_init(bars + 8 * (STAGES + s), 4 * CONSUMERS);
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      fence_async_smem();
    }
    __syncthreads();
    if (threadIdx.x < 128) {
      if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      if (threadIdx.x == 0) producer(tmA, tmB, ring, bars, M, tiles_m, tiles_n, kslots);
    } else {
      if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
      consumer(tmC, ring, cstage, bars, M, N, tiles_m, tiles_n, kslots, ws);
    }
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int SPLIT_K>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_wgmma_splitk(const __grid_constant__ autosched_wgmma::TensorMap tmA, const __grid_constant__ autosched_wgmma::TensorMap tmB,
                   const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K, unsigned char* workspace) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmmaSplitK<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP, SPLIT_K>::run(
      &tmA, &tmB, &tmC, M, N, K, workspace, smem);
}

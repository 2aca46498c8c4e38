// The serial split-K reduction of a persistent wgmma kernel, in one launch, for kernels whose consumer
// threads each hold NV float4s of a tile's FP32 accumulators (hgemm_wgmma_swap.cuh).  The algorithm
// is hgemm_wgmma_splitk.cuh's, which keeps its own copy: editing that file would change its build id
// and void its shipped recordings.
//
// No CTA ever waits for another, so nothing assumes the slices of a tile are resident together:
//   1. each consumer thread stores its accumulators to partials[slice][tile] in fragment order
//      (float4 j of thread c at j * CT + c: coalesced; the thread that reads it back holds the same
//      fragment positions in another CTA);
//   2. release: a gpu-scope fence, the CT consumer threads meet at named barrier BAR, one adds 1 to
//      counters[tile] (acq_rel);
//   3. the CTA whose add returns SPLIT_K - 1 is the tile's last: it resets the counter to 0 (every
//      slice has arrived; the next launch is stream-ordered after this one, so no memset between
//      launches), the verdict reaches its other threads through bar.red.or, they fence (acquire) and
//      add the other slices' partials with ld.global.cg (L2, never a stale L1 line).
//
// Workspace (allocated zeroed once by the launcher): a u32 counter per tile padded to 256 bytes,
// then SPLIT_K x tiles partial tiles of NV * CT float4s.
#pragma once

namespace autosched_wgmma {

template <int SPLIT_K, int CT, int NV, int BAR>
struct SplitKReduce {
  static constexpr int TILE_VEC = NV * CT;                  // float4s of one tile's partial

  // of ceil(K / BK) = q * SPLIT_K + r k-blocks, slice s holds q + (s < r) from s * q + min(s, r)
  static __device__ __forceinline__ void slice_range(int slice, int kslots, int& kb0, int& nk) {
    const int q = kslots / SPLIT_K, r = kslots % SPLIT_K;
    kb0 = slice * q + min(slice, r);
    nk = q + (slice < r);
  }

  static __device__ __forceinline__ float4* partial(unsigned char* ws, int tiles, int slice, int tile) {
    const size_t counter_bytes = ((size_t)tiles * 4 + 255) / 256 * 256;
    return reinterpret_cast<float4*>(ws + counter_bytes) + ((size_t)slice * tiles + tile) * TILE_VEC;
  }

  // acc: this thread's NV * 4 accumulators.  True: this CTA finished the tile's last slice and acc
  // holds the sum of all of them.  Called by all CT consumer threads (ct = 0 .. CT - 1).
  static __device__ __forceinline__ bool reduce(float* acc, unsigned char* ws, int tiles, int tile, int slice,
                                                int ct) {
    float4* mine = partial(ws, tiles, slice, tile) + ct;
#pragma unroll
    for (int j = 0; j < NV; ++j)
      __stcg(mine + j * CT, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
    __threadfence();
    asm volatile("bar.sync %0, %1;\n" ::"n"(BAR), "n"(CT) : "memory");
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
                 : "=r"(last) : "r"(last), "n"(BAR), "n"(CT) : "memory");
    if (!last) return false;
    __threadfence();
#pragma unroll 1
    for (int s = 0; s < SPLIT_K; ++s) {
      if (s == slice) continue;
      const float4* other = partial(ws, tiles, s, tile) + ct;
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        const float4 v = __ldcg(other + j * CT);
        acc[4 * j] += v.x;
        acc[4 * j + 1] += v.y;
        acc[4 * j + 2] += v.z;
        acc[4 * j + 3] += v.w;
      }
    }
    return true;
  }
};

}  // namespace autosched_wgmma

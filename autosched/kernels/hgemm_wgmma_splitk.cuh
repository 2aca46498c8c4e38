// Split-K for the wgmma + TMA GEMM of hgemm_wgmma.cuh: the same producer and consumer warpgroups,
// mbarrier ring and TMA-store epilogue, but the persistent grid walks work units (output tile,
// K slice), so that a GEMM with few output tiles and a long K (128 prefill rows: 64 tiles of
// 128 x 64 for 132 SMs) still fills the GPU.  Its template (templates/hgemm_wgmma_splitk.py)
// renders SPLIT_K 2, 3, 4, 6 and 8 (deep splits stream a skinny GEMM's weights through more SMs):
// one slice is hgemm_wgmma itself.  The kernel is HgemmWgmma with its SPLIT_K policy (hgemm_wgmma.cuh)
// and the reduction of splitk_reduce.cuh.
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

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int SPLIT_K>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_wgmma_splitk(const __grid_constant__ autosched_wgmma::TensorMap tmA, const __grid_constant__ autosched_wgmma::TensorMap tmB,
                   const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K, unsigned char* workspace) {
  static_assert(SPLIT_K >= 2 && SPLIT_K <= 8, "split-K into 2 to 8 slices (1 is hgemm_wgmma itself)");
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP, SPLIT_K>::run(
      &tmA, &tmB, &tmC, M, N, K, workspace, smem);
}

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
// The slices meet in one launch, no CTA waiting for another: each stores its FP32 partial, and the CTA
// that finishes a tile's last slice adds the others' and stores C (splitk_reduce.cuh says how).
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

// The q4f16_1 GEMV with a decode step's epilogue (gemv_q4f16_fused's loop, rows and epilogue) whose
// blocks take their row tiles from a counter instead of one tile a block.
//
// At batch 1 a matmul of a decode step ends when its slowest SM does.  With one tile a block, the
// grid runs in waves of whole blocks, and blocks reading HBM at different speeds finish microseconds
// apart: on the 7B q4f16_1 step (H100, %globaltimer marks in every block, 2026-11-26) the qkv
// matmul's blocks finished over 5 us, gate_up's over 10 us, down's over 3 us.  Here the grid is what
// the GPU holds at once and every block, after its first tile (blockIdx.x, whose weights it streams
// into the L2 before the dependency wait as gemv_q4f16_fused does), asks the counter for the next
// one, so the SMs run out of work together, a tile apart.  V is staged once a block, not once a tile.
//
// tiles[0] hands out tiles, tiles[1] counts the blocks that found none left: the last of those
// resets both, so the next launch (the same matmul of the next layer, whose blocks touch the
// counter only after their own dependency wait, by which time this grid has finished) starts at 0.
#pragma once
#include "gemv_q4f16.cuh"

template <int N, int K, int LOAD_K, int COMPUTE_K, int VEC_C, int TX_S, int TS, int TR, int TILE_S,
          int TILE_R, int VEC_LOAD, int LN, int LK, int V_SHARED, int UNROLL, int HINT, int PREFETCH, int EPI>
__global__ void __launch_bounds__(TS * TR)
gemv_q4f16_dynamic(const u32* __restrict__ wq, const half* __restrict__ scales, const half* __restrict__ v,
                   half* __restrict__ out, float* x, const double* ss_in, double* ss_out, int dim, float eps,
                   unsigned* tiles) {
  using G = autosched_gemv::Gemv<N, K, LOAD_K, COMPUTE_K, VEC_C, TX_S, TS, TR, TILE_S, TILE_R, VEC_LOAD, LN, LK,
                                 V_SHARED, UNROLL, HINT, PREFETCH>;
  constexpr int TILES = (N + G::ROWS - 1) / G::ROWS;
  extern __shared__ uint4 smem[];
  // the next tile, asked for at the start of the current one so that the atomic's round trip hides
  // behind the tile's loop; two slots, so a slow thread still reading one never sees it rewritten
  __shared__ int next[2];
  const autosched_epi::Args ea{x, ss_in, ss_out, dim, eps};
  const int s = G::s_of(), r = G::r_of();
  const int tid = threadIdx.x + threadIdx.y * blockDim.x;
  int tile = blockIdx.x;
  G::prefetch_tile(wq, scales, tile, tid);
  u32 q[TILE_S][G::WPT];
  if constexpr (PREFETCH) {
    if (tile < TILES) G::load_tile(wq, tile * G::ROWS + s * TILE_S, r * G::WPT, q);
  }
  const float scale = G::template wait_and_stage<EPI>(v, smem, ea, tid);
  for (int it = 0; tile < TILES; ++it) {
    if (tid == 0) next[it & 1] = (int)atomicAdd(tiles, 1u) + (int)gridDim.x;
    if constexpr (PREFETCH) {
      if (it > 0) G::load_tile(wq, tile * G::ROWS + s * TILE_S, r * G::WPT, q);
    }
    G::template rows_tile<EPI>(wq, scales, v, out, ea, scale, smem, tile, s, r, tid, q);
    __syncthreads();           // next[] is written; the partials' buffer is free for the next tile
    tile = next[it & 1];
  }
  if (tid == 0 && atomicAdd(tiles + 1, 1u) == gridDim.x - 1) {
    tiles[0] = 0u;
    tiles[1] = 0u;
  }
}

// The q4f16_1 GEMV with a decode step's epilogue (gemv_q4f16_fused), which then counts its block
// as done in its kv group's word of `flags` (step_flags.cuh): the decode step's qkv matmul, whose
// attention waits on those counts instead of on the grid.  A block's rows must lie in one group
// (head_size a multiple of the block's rows: the launcher checks), so every group is counted
// (kv_mul + 2) * head_size / rows times a layer.
//
// Its own file: the GEMV's header, whose hash the shipped recordings of the q4 GEMV carry, stays as
// it is, and so do their measurements, which time the same loop.
#pragma once
#include "gemv_q4f16.cuh"
#include "step_flags.cuh"

template <int N, int K, int LOAD_K, int COMPUTE_K, int VEC_C, int TX_S, int TS, int TR, int TILE_S,
          int TILE_R, int VEC_LOAD, int LN, int LK, int V_SHARED, int UNROLL, int HINT, int PREFETCH, int EPI>
__global__ void __launch_bounds__(TS * TR)
gemv_q4f16_signal(const u32* __restrict__ wq, const half* __restrict__ scales, const half* __restrict__ v,
                  half* __restrict__ out, float* x, const double* ss_in, double* ss_out, int dim, float eps,
                  unsigned* flags, int q_dim, int kv_dim, int head_size, int kv_mul) {
  using G = autosched_gemv::Gemv<N, K, LOAD_K, COMPUTE_K, VEC_C, TX_S, TS, TR, TILE_S, TILE_R, VEC_LOAD, LN, LK,
                                 V_SHARED, UNROLL, HINT, PREFETCH>;
  G::template run<EPI>(wq, scales, v, out, autosched_epi::Args{x, ss_in, ss_out, dim, eps});
  const int g = autosched_flags::group_of_row(blockIdx.x * G::ROWS, q_dim, kv_dim, head_size, kv_mul);
  autosched_flags::signal_done(flags + g, threadIdx.x + threadIdx.y * blockDim.x);
}

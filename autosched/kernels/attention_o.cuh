// rope_attention_o: a decode step's attention and its o matmul (q4f16_1 weights) with the residual
// epilogue in one launch:
//
//   att     = rope_attention(qkv)                               (decode.cuh: attention_item)
//   x      += W_o . att;  x16 = x;  ss_out += sum of x^2          (epilogue.cuh's RESIDUAL)
//
// Why: at a short context attention is a chain of round trips (a few us after the qkv matmul),
// and a separate o matmul then pays its own launch, dependency wait, load of att and tail, about
// 5 us of an H100's 7B q4f16_1 step for 8 MB of weights.  Here the o weights are in shared memory
// before attention even waits, and the matmul is a few hundred FMAs a lane once att is known.
//
// Grid (n_heads, nsplit), the attention's split-KV grid; block b = s * n_heads + h owns o rows
// [b RB, (b + 1) RB), RB = dim / (n_heads * nsplit), whole rows, so its sums need no other block:
//   1. before anything: its RB rows of W_o (natural q4f16_1 words, then their scales) into shared
//      memory with cp.async;
//   2. the attention slice (h, s), possibly empty; the block that writes head h's output (the only
//      slice, or the slices' merge) then counts it done: heads_done += 1 (after a fence);
//   3. every block reads its rows of x, waits until heads_done == n_heads (acquire), loads att
//      into shared memory and finishes its rows: a warp RPW rows, a lane the words lane, lane + 32,
//      ... of each, a warp-shuffle sum, then the residual epilogue.  The last block past the wait
//      (a ticket, passed) resets heads_done and passed for the next launch.
//
// Waiting on other blocks of the same grid needs every block resident at once: the host keeps
// n_heads * nsplit within ATTENTION_BLOCKS_PER_SM blocks an SM (templates/decode.py).  The writers
// are among each head's first `splits` blocks, dispatched before any block that only waits, and the
// next kernel cannot launch before every block of this one has started, so a waiting block never
// holds the place a writer needs.
//
// The q4f16_1 weight of element (r, c) is (nibble - 7) * scale[r][c / 32]: a word (8 columns of one
// group) is summed in half2 (as the q4 GEMV's vec_c = 2 configs do), then scaled in float.
#pragma once
#include <cuda_fp16.h>
#include "decode.cuh"

namespace autosched_attn_o {

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace autosched_attn_o

// Dynamic shared memory: RB rows of words (RB * dim / 2 bytes), then their scales (RB * dim / 16),
// then the attention's merge buffer (2 floats a warp).  HS: head size; RPW: o rows a warp (RB =
// RPW x warps); WPL: words a lane takes of a row (dim = 256 WPL; att, dim halves, reuses the
// attention's THREADS * 8-float reduction buffer, so dim <= 4096 at 256 threads).
template <int THREADS, int KPRE, int PAIRS, int HS, int RPW, int WPL>
__global__ void __launch_bounds__(THREADS, ATTENTION_BLOCKS_PER_SM)
rope_attention_o(__half* att, float* part, unsigned* count, const __half* qkv, __half* k_cache, __half* v_cache,
                 const int* pos_p, const float2* __restrict__ rope_cs, int n_heads, int kv_dim, int kv_mul,
                 const uint4* __restrict__ wo_q, const uint4* __restrict__ wo_scale, unsigned* heads_done,
                 unsigned* passed, float* x, __half* x16, double* ss_out) {
  using namespace autosched_decode;
  using namespace autosched_attn_o;
  constexpr int NW = THREADS / 32, RB = RPW * NW, DIM = 256 * WPL;
  constexpr int KW = DIM / 8, G = DIM / 32;                 // words and scales a row
  constexpr int Q16 = RB * KW / 4, S16 = RB * G / 8;        // 16-byte pieces of the block's words, scales
  static_assert(HS % 2 == 0 && HS <= 256 && HS <= THREADS, "a thread a dimension of the head");
  static_assert(DIM * 2 <= THREADS * 8 * 4, "att (dim halves) fits the attention's reduction buffer");
  static_assert((RB * G) % 8 == 0, "the block's scales copy in 16-byte pieces");
  extern __shared__ uint4 dyn[];
  const unsigned* sw = reinterpret_cast<const unsigned*>(dyn);           // [RB][KW] words
  const __half* ssc = reinterpret_cast<const __half*>(dyn + Q16);        // [RB][G] scales
  float* merge = reinterpret_cast<float*>(dyn + Q16 + S16);
  __shared__ __align__(16) float red[THREADS * 8];
  __shared__ unsigned ticket;
  const int h = blockIdx.x, tid = threadIdx.x, lane = tid % 32, w = tid / 32;
  const long long b = (long long)blockIdx.y * n_heads + h;
  const int row0 = (int)b * RB;

  grid_dependents_launch();
  for (int i = tid; i < Q16; i += THREADS) cp_async16(dyn + i, wo_q + b * Q16 + i);
  for (int i = tid; i < S16; i += THREADS) cp_async16(dyn + Q16 + i, wo_scale + b * S16 + i);
  asm volatile("cp.async.commit_group;" ::: "memory");

  const bool wrote = attention_item<__half, THREADS, PdlWait, KPRE, PAIRS>(
      att, part, count, qkv, k_cache, v_cache, pos_p, rope_cs, n_heads, kv_dim, HS, kv_mul, h, blockIdx.y, gridDim.y,
      merge, red, ticket, PdlWait{});
  if (wrote) {
    __threadfence();
    __syncthreads();
    if (tid == 0) atomicAdd(heads_done, 1u);
  }
  // a block whose slice was empty returned before its wait: x comes from earlier kernels
  grid_dependency_wait();
  float xr[RPW];
#pragma unroll
  for (int j = 0; j < RPW; ++j) xr[j] = lane == 0 ? x[row0 + w * RPW + j] : 0.f;
  if (tid == 0) {
    while (ld_acquire(heads_done) < (unsigned)n_heads) __nanosleep(32);
    if (atomicAdd(passed, 1u) == gridDim.x * gridDim.y - 1) {    // every block is past: reset both
      *passed = 0;
      *heads_done = 0;
    }
  }
  __syncthreads();
  uint4* att_s = reinterpret_cast<uint4*>(red);          // the merge is done with red
  for (int i = tid; i < DIM / 8; i += THREADS) att_s[i] = __ldcg(reinterpret_cast<const uint4*>(att) + i);
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();

  float acc[RPW];
#pragma unroll
  for (int j = 0; j < RPW; ++j) acc[j] = 0.f;
  const __half2 zero_point = __float2half2_rn(1024.f + 7.f);
#pragma unroll 4
  for (int i = 0; i < WPL; ++i) {
    const int word = 32 * i + lane;                      // columns 8 word .. 8 word + 7
    const uint4 a4 = att_s[word];
    const __half2* a2 = reinterpret_cast<const __half2*>(&a4);
    // att as the pairs (a_e, a_e+4) that the nibble pairs below line up with
    const __half2 ap[4] = {__lows2half2(a2[0], a2[2]), __highs2half2(a2[0], a2[2]), __lows2half2(a2[1], a2[3]),
                           __highs2half2(a2[1], a2[3])};
#pragma unroll
    for (int j = 0; j < RPW; ++j) {
      const int r = w * RPW + j;
      const unsigned wv = sw[r * KW + word];
      __half2 d = __float2half2_rn(0.f);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        // nibbles e and e + 4 as the halves 1024 + n (one shift and one LOP3), less 1024 + 7:
        // the weights n - 7 exactly, with no integer-to-float conversion (a quarter-rate unit)
        const unsigned t = ((wv >> (4 * e)) & 0x000F000Fu) | 0x64006400u;
        d = __hfma2(__hsub2(*reinterpret_cast<const __half2*>(&t), zero_point), ap[e], d);
      }
      const float2 df = __half22float2(d);
      acc[j] = fmaf(__half2float(ssc[r * G + word / 4]), df.x + df.y, acc[j]);
    }
  }
  float sq = 0.f;
#pragma unroll
  for (int j = 0; j < RPW; ++j) {
    const float o = warp_sum(acc[j]);
    if (lane == 0) {
      const int r = row0 + w * RPW + j;
      const float v = xr[j] + o;
      x[r] = v;
      x16[r] = __float2half_rn(v);
      sq = fmaf(v, v, sq);
    }
  }
  if (lane == 0) atomicAdd(ss_out, (double)sq);
}

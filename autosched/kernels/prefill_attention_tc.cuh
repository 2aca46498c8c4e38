// Causal prefill attention on tensor cores: the same contract as prefill.cuh's prefill_attention (same
// arguments, same grid (ceil(n_q / BQ), n_heads), the same output (T, n_heads * HS) fp16), with Q K^T and
// P V on mma.sync m16n8k16 (fp16 in, fp32 accumulate) instead of CUDA-core FMAs.
//
//   * A block is (a tile of BQ queries, a head), BQ / 16 warps; warp w owns the 16 query rows 16w..16w+15,
//     its scores S (16 x BK), its row max and sum and its output O (16 x HS) all in registers.
//   * Q is RoPE'd once, in float with the same formula as prefill_attention, then rounded to fp16 (the one
//     numerics change: an MMA operand is fp16; prefill_attention keeps q in float).  The 1/sqrt(HS) scale is
//     not folded into q (that would add a rounding); it multiplies the fp32 scores, with log2(e), so the
//     softmax runs on exp2f.  K is read from the cache already RoPE'd (rope_kv_rows wrote it).
//   * K and V tiles of BK = 64 positions stream through shared memory, two buffers each, with cp.async:
//     tile j + 1 loads while tile j is multiplied.  Positions past the causal limit of the block are
//     zero-filled (cp.async src-size 0), never read: the cache holds whatever is there (NaN in the tests),
//     and a zero V row keeps 0 * garbage out of O.
//   * Fragments come from ldmatrix: Q (row-major [query][d]) as the A operand; K ([key][d], as the cache
//     holds it) is already the "col" B operand of S = Q K^T, no transpose in memory; V ([key][d]) goes
//     through ldmatrix.trans to be the B operand of O += P V.  P never leaves registers: the accumulator
//     layout of two 16 x 8 score tiles is the A fragment layout of one 16 x 16 tile.
//   * Causality: key tiles run from position 0 up to the last one the block's last query sees; a warp
//     skips (computes nothing for) tiles wholly past its own last query, and masks only tiles that reach
//     past its first query.  Tile 0 holds position 0, which every query sees, so a row's running max is
//     finite from the first tile on and exp2f(m_old - m_new) never meets -inf - -inf.
//   * GQA: head h reads kv head h / kv_mul.
//
// Shared memory (dynamic, halves): Q [BQ][LD], K [2][BK][LD], V [2][BK][LD], LD = HS + 8.  The 16-byte pad
// puts the 8 rows one ldmatrix phase reads in 8 distinct 16-byte bank groups for every HS % 16 == 0 (a row
// of 2 HS + 16 bytes), so neither the cp.async stores nor the ldmatrix reads conflict.  At the end each
// warp stages its normalized O in its own 16 Q rows (only it ever read them) for 16-byte global stores.
#pragma once
#include <cuda_fp16.h>

namespace autosched_attn_tc {

constexpr int BK = 64;      // keys a tile

__device__ __forceinline__ void copy16(__half* dst, const __half* src, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

template <bool TRANS>
__device__ __forceinline__ void ldmatrix4(unsigned (&r)[4], const __half* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

// c (16 x 8, f32) += a (16 x 16, row) . b (16 x 8, col)
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}

// max / sum over the 4 lanes of a quad (the lanes holding one accumulator row)
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

}  // namespace autosched_attn_tc

// out (n_q, n_heads * HS) fp16; qkv (n_q, n_heads * HS + 2 kv_dim) fp16, q of prompt row t at column h * HS;
// k_cache, v_cache (seq_len, kv_dim) fp16, position p at row p (k RoPE'd); rope_cs (seq_len, HS / 2) (cos, sin).
// Query t sits at position pos0 + t and sees positions 0 .. pos0 + t.  Grid (ceil(n_q / BQ), n_heads).
template <int HS, int BQ>
__global__ void __launch_bounds__(BQ / 16 * 32)
prefill_attention_tc(__half* out, const __half* __restrict__ qkv, const __half* __restrict__ k_cache,
                     const __half* __restrict__ v_cache, const float2* __restrict__ rope_cs, int pos0, int n_q,
                     int n_heads, int kv_dim, int kv_mul) {
  using namespace autosched_attn_tc;
  constexpr int WARPS = BQ / 16, THREADS = WARPS * 32;
  constexpr int LD = HS + 8;          // halves a shared row (see the header)
  constexpr int NS = BK / 8;          // 16 x 8 score tiles of a warp
  constexpr int NO = HS / 8;          // 16 x 8 output tiles of a warp
  static_assert(HS % 16 == 0 && HS >= 16 && HS <= 128 && HS != 80 && HS != 96,
                "head size: a multiple of 16 (the MMA's k) up to 128 (O and S in registers), but 80 and 96 "
                "(ptxas spills there): templates/prefill.py TC_HEAD_SIZES");
  static_assert(BQ == 64 || BQ == 128, "query tile: 4 or 8 warps of 16 rows");
  static_assert(BK % 16 == 0, "key tiles: whole 16-key MMA steps");
  static_assert(2 * LD * (BQ + 4 * BK) <= 227 * 1024, "shared memory: Q + two K and two V tiles fit an SM");
  static_assert((LD * 2) % 16 == 0, "shared rows start on 16-byte boundaries (cp.async, ldmatrix)");

  extern __shared__ uint4 smem_attn_tc[];
  __half* qs = reinterpret_cast<__half*>(smem_attn_tc);   // [BQ][LD]
  __half* ks = qs + BQ * LD;                               // [2][BK][LD]
  __half* vs = ks + 2 * BK * LD;                           // [2][BK][LD]

  // Blocks start in the order of their linear index; read it head-fastest, so the longest query tiles
  // (the last queries, most keys) of every head start first and the short ones fill the tail, and the
  // heads that share a kv head run side by side (their K and V tiles meet in L2).
  const int lin = blockIdx.y * gridDim.x + blockIdx.x;
  const int h = lin % gridDim.y;
  const int q0 = (gridDim.x - 1 - lin / gridDim.y) * BQ;
  const int kvh = h / kv_mul;
  const int q_dim = n_heads * HS;
  const long long stride = q_dim + 2 * kv_dim;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;                    // accumulator row g (and g + 8), columns 2t, 2t + 1

  // positions the tile's last query sees (rows past n_q see as many as the last real one)
  const int n_keys = pos0 + min(q0 + BQ, n_q);
  const int n_tiles = (n_keys + BK - 1) / BK;
  const __half* kbase = k_cache + kvh * HS;
  const __half* vbase = v_cache + kvh * HS;

  auto load_kv = [&](int tile, int buf) {
    const int k0 = tile * BK;
    __half* kd = ks + buf * BK * LD;
    __half* vd = vs + buf * BK * LD;
#pragma unroll
    for (int i = threadIdx.x; i < BK * HS / 8; i += THREADS) {
      const int r = i / (HS / 8), c = (i % (HS / 8)) * 8;
      const bool valid = k0 + r < n_keys;
      const long long off = (long long)(valid ? k0 + r : 0) * kv_dim + c;    // in bounds even when not read
      copy16(kd + r * LD + c, kbase + off, valid);
      copy16(vd + r * LD + c, vbase + off, valid);
    }
    commit();
  };
  load_kv(0, 0);          // in flight while the query tile is RoPE'd

  // the query tile, RoPE'd in float as prefill_attention does it, then fp16; rows past n_q are zero
  for (int i = threadIdx.x; i < BQ * HS / 2; i += THREADS) {
    const int r = i / (HS / 2), j = i % (HS / 2);
    float a = 0.f, b = 0.f;
    if (q0 + r < n_q) {
      const float2 q = __half22float2(*reinterpret_cast<const __half2*>(qkv + (q0 + r) * stride + h * HS + 2 * j));
      const float2 cs = rope_cs[(long long)(pos0 + q0 + r) * (HS / 2) + j];
      a = q.x * cs.x - q.y * cs.y;
      b = q.x * cs.y + q.y * cs.x;
    }
    *reinterpret_cast<__half2*>(qs + r * LD + 2 * j) = __floats2half2_rn(a, b);
  }

  const int row0 = q0 + warp * 16;                 // the warp's first query (prompt row)
  const bool active = row0 < n_q;                  // a warp wholly past the prompt computes nothing
  const int first_pos = pos0 + row0, last_pos = first_pos + 15;
  const int pos_lo = first_pos + g, pos_hi = pos_lo + 8;
  const float scale_log2 = rsqrtf((float)HS) * 1.4426950408889634f;     // 1/sqrt(HS) * log2(e)

  // ldmatrix row addresses of this lane (see mma's fragment layouts): Q as A, K as B, V as B transposed
  const __half* qa = qs + (warp * 16 + lane % 16) * LD + (lane / 16) * 8;
  const int kb = (lane % 8 + (lane / 16) * 8) * LD + ((lane / 8) % 2) * 8;
  const int vb = (lane % 8 + ((lane / 8) % 2) * 8) * LD + (lane / 16) * 8;

  float o[NO][4], m[2], l[2];                      // l: this lane's share of the row sums (quad-summed at the end)
#pragma unroll
  for (int d = 0; d < NO; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  m[0] = m[1] = -__int_as_float(0x7f800000);
  l[0] = l[1] = 0.f;

  for (int tile = 0; tile < n_tiles; ++tile) {
    if (tile + 1 < n_tiles) load_kv(tile + 1, (tile + 1) % 2);
    else commit();                                 // an empty group: wait<1> below stays right
    wait<1>();
    __syncthreads();                               // tile `tile` (and, the first time, Q) is visible to all
    const int k0 = tile * BK;
    if (active && k0 <= last_pos) {
      const __half* kt = ks + (tile % 2) * BK * LD;
      const __half* vt = vs + (tile % 2) * BK * LD;
      float s[NS][4];
#pragma unroll
      for (int n = 0; n < NS; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < HS / 16; ++kk) {
        unsigned a[4];
        ldmatrix4<false>(a, qa + kk * 16);
#pragma unroll
        for (int n = 0; n < NS / 2; ++n) {
          unsigned b[4];                           // keys 16n..16n+7 (b[0], b[1]) and 16n+8.. (b[2], b[3])
          ldmatrix4<false>(b, kt + n * 16 * LD + kb + kk * 16);
          mma(s[2 * n], a, b[0], b[1]);
          mma(s[2 * n + 1], a, b[2], b[3]);
        }
      }
      if (k0 + BK - 1 > first_pos) {               // the tile reaches past the warp's first query
#pragma unroll
        for (int n = 0; n < NS; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (k0 + n * 8 + 2 * t + (e & 1) > (e < 2 ? pos_lo : pos_hi)) s[n][e] = -__int_as_float(0x7f800000);
      }
      // online softmax in the log2 domain: the new running max, the old sums and outputs rescaled
      float mx[2] = {-__int_as_float(0x7f800000), -__int_as_float(0x7f800000)};
#pragma unroll
      for (int n = 0; n < NS; ++n) {
        mx[0] = fmaxf(mx[0], fmaxf(s[n][0], s[n][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[n][2], s[n][3]));
      }
      float corr[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float mn = fmaxf(m[r], quad_max(mx[r]) * scale_log2);      // finite: see the header
        corr[r] = exp2f(m[r] - mn);                                       // 0 on the first tile
        m[r] = mn;
        l[r] *= corr[r];
      }
#pragma unroll
      for (int n = 0; n < NS; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[n][e] = exp2f(fmaf(s[n][e], scale_log2, -m[e / 2]));
          l[e / 2] += s[n][e];
        }
#pragma unroll
      for (int d = 0; d < NO; ++d) {
        o[d][0] *= corr[0];
        o[d][1] *= corr[0];
        o[d][2] *= corr[1];
        o[d][3] *= corr[1];
      }
      // O += P V, 16 keys a step: score tiles 2kk and 2kk + 1 are the A fragment of keys 16kk..16kk+15
#pragma unroll
      for (int kk = 0; kk < BK / 16; ++kk) {
        const unsigned a[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                               pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                               pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int d = 0; d < HS / 16; ++d) {
          unsigned b[4];                           // dimensions 16d..16d+7 (b[0], b[1]) and 16d+8.. (b[2], b[3])
          ldmatrix4<true>(b, vt + kk * 16 * LD + vb + d * 16);
          mma(o[2 * d], a, b[0], b[1]);
          mma(o[2 * d + 1], a, b[2], b[3]);
        }
      }
    }
    __syncthreads();                               // every warp is done with the buffer the next load refills
  }
  wait<0>();

  if (!active) return;
  const float inv0 = 1.f / quad_sum(l[0]), inv1 = 1.f / quad_sum(l[1]);
  __half* ow = qs + warp * 16 * LD;                // the warp's own Q rows: read by no one else, done with
#pragma unroll
  for (int d = 0; d < NO; ++d) {
    *reinterpret_cast<__half2*>(ow + g * LD + d * 8 + 2 * t) = __floats2half2_rn(o[d][0] * inv0, o[d][1] * inv0);
    *reinterpret_cast<__half2*>(ow + (g + 8) * LD + d * 8 + 2 * t) = __floats2half2_rn(o[d][2] * inv1, o[d][3] * inv1);
  }
  __syncwarp();
#pragma unroll
  for (int i = lane; i < 16 * HS / 8; i += 32) {
    const int r = i / (HS / 8), c = (i % (HS / 8)) * 8;
    if (row0 + r < n_q)
      *reinterpret_cast<uint4*>(out + (long long)(row0 + r) * q_dim + h * HS + c) =
          *reinterpret_cast<const uint4*>(ow + r * LD + c);
  }
}

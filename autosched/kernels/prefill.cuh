// Kernels of the engine's batched prefill (engine/prefill.py): a prompt of T tokens goes through a
// layer at once, its matmuls on the dynamic-M GEMM (hgemm_dyn.cuh, M = T), these kernels around them.
// Activations are fp16, row-major (T, width); the residual stream x stays float (T, dim) as in the
// decode step (decode.cuh says why).  The norm weights are folded into the matrices (engine/weights.py:
// W diag(w)), so a norm here only scales a row by rsqrt(mean(x^2) + eps).
//
//   embed_rows_norm   x[t] = table[tokens[t]];  xn[t] = x[t] * rsqrt(mean(x[t]^2) + eps)   (a block a row)
//   add_norm_rows     x[t] += y[t] (y may be null);  xn[t] = the same norm of the new x[t]   (a block a row)
//   swiglu_rows       h[i] = silu(gu[2i]) * gu[2i+1]: gate and up interleaved by column, as the decode
//                     step's matrices hold them
//   rope_kv_rows      K of every prompt position RoPE'd and, with V, written to the layer's KV cache at
//                     pos0 + t (one pass, a block a position)
//   prefill_attention causal attention over the prompt: a block per (query tile, head), online softmax
//                     over key tiles up to the causal limit, GQA (head h reads kv head h / kv_mul), q
//                     RoPE'd on the fly; fp16 in, fp32 arithmetic, fp16 out (T, n_heads * HS)
//   dequant_q4        a q4f16_1 matrix, in the layout its served GEMV config packed it (nibble order and
//                     (n, k) word tiles, layouts.py), to fp16 (N, K) row-major: the GEMM's B
//   dequant_int8      an int8 matrix with a per-row fp16 scale to fp16 (N, K)
//
// Every launch is an ordinary one (no programmatic dependent launch): a prefill is a handful of
// launches a layer, each of them long.
#pragma once
#include <cuda_fp16.h>

namespace autosched_prefill {

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

template <int THREADS>
__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (THREADS > 32) {
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    v = 0.f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) v += red[w];
    __syncthreads();
  }
  return v;
}

// over the 16 lanes of a half warp (xor offsets below 16 stay inside it)
__device__ __forceinline__ float half_warp_max(float v) {
#pragma unroll
  for (int o = 8; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float half_warp_sum(float v) {
#pragma unroll
  for (int o = 8; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// 8 halves of one 16-byte load as floats
__device__ __forceinline__ void unpack8(uint4 r, float* f) {
  const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

}  // namespace autosched_prefill

// grid (T): x (T, dim) float, xn (T, dim) fp16, table (vocab, dim) float, tokens (T) int32
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
embed_rows_norm(float* x, __half* xn, const float* __restrict__ table, const int* __restrict__ tokens, int dim,
                float eps) {
  using namespace autosched_prefill;
  __shared__ float red[THREADS / 32];
  const long long t = blockIdx.x;
  const float* row = table + (long long)tokens[t] * dim;
  float* xr = x + t * dim;
  float sq = 0.f;
  for (int i = threadIdx.x; i < dim; i += THREADS) {
    const float v = row[i];
    xr[i] = v;
    sq += v * v;
  }
  const float s = rsqrtf(__fdividef(block_sum<THREADS>(sq, red), (float)dim) + eps);
  for (int i = threadIdx.x; i < dim; i += THREADS) xn[t * dim + i] = __float2half_rn(xr[i] * s);
}

// grid (rows): x (rows, dim) float += y (rows, dim) fp16 where y is not null; xn = the row's norm
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
add_norm_rows(float* x, const __half* __restrict__ y, __half* xn, int dim, float eps) {
  using namespace autosched_prefill;
  __shared__ float red[THREADS / 32];
  const long long t = blockIdx.x;
  float* xr = x + t * dim;
  float sq = 0.f;
  for (int i = threadIdx.x; i < dim; i += THREADS) {
    float v = xr[i];
    if (y != nullptr) {
      v += __half2float(y[t * dim + i]);
      xr[i] = v;
    }
    sq += v * v;
  }
  const float s = rsqrtf(__fdividef(block_sum<THREADS>(sq, red), (float)dim) + eps);
  for (int i = threadIdx.x; i < dim; i += THREADS) xn[t * dim + i] = __float2half_rn(xr[i] * s);
}

// h (n) = silu(gate) * up with (gate i, up i) the half2 gu[i]: gu (T, 2 hidden) with gate j at column
// 2j and up j at 2j + 1 is, flat, n = T * hidden such pairs
__global__ void swiglu_rows(__half* h, const __half2* __restrict__ gu, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const float2 p = __half22float2(gu[i]);
    h[i] = __float2half_rn(p.x / (1.f + __expf(-p.x)) * p.y);
  }
}

// grid (T): position pos0 + t of the layer's cache (seq_len, kv_dim) gets the RoPE'd k and the v of
// row t of qkv (T, q_dim + 2 kv_dim), rounded to fp16 as the decode step rounds them.  rope_cs
// (seq_len, head_size / 2) (cos, sin).
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
rope_kv_rows(__half* k_cache, __half* v_cache, const __half* __restrict__ qkv, const float2* __restrict__ rope_cs,
             int pos0, int q_dim, int kv_dim, int head_size) {
  const int t = blockIdx.x, pos = pos0 + t;
  const __half* kin = qkv + (long long)t * (q_dim + 2 * kv_dim) + q_dim;
  const __half* vin = kin + kv_dim;
  __half* kout = k_cache + (long long)pos * kv_dim;
  __half* vout = v_cache + (long long)pos * kv_dim;
  const int half_hs = head_size / 2;
  for (int i = threadIdx.x; i < kv_dim / 2; i += THREADS) {     // the pair (2i, 2i+1): pair i % (hs/2) of its head
    const float2 cs = rope_cs[(long long)pos * half_hs + i % half_hs];
    const float2 k = __half22float2(*reinterpret_cast<const __half2*>(kin + 2 * i));
    kout[2 * i] = __float2half_rn(k.x * cs.x - k.y * cs.y);
    kout[2 * i + 1] = __float2half_rn(k.x * cs.y + k.y * cs.x);
  }
  for (int i = threadIdx.x; i < kv_dim; i += THREADS) vout[i] = vin[i];
}

// Causal attention of the prompt's queries t in [0, n_q) (position pos0 + t) over cache positions
// 0 .. pos0 + t, for one head and BQ queries a block.  grid (ceil(n_q / BQ), n_heads), 256 threads as a
// 16 x 16 grid (tx = lane % 16 along keys and head dimensions, ty along queries): a thread owns RQ = BQ/16
// query rows, and of each key tile RK = BKV/16 keys (tx + 16 c), of the output RD = HS/16 dimensions
// (tx + 16 d).  A query row is owned by the 16 lanes of one half warp, so its max and sum are half-warp
// shuffles and its probabilities, staged in shared memory, are read back by the same half warp.
//
// Shared memory (dynamic, floats): Q [BQ][HS + 4] (RoPE'd, times 1/sqrt(HS)), K [BKV][HS + 4], V [BKV][HS],
// P [BQ][BKV + 4].  Rows of a multiple of 4 floats take float4 loads; with HS % 8 == 0, (HS + 4) / 4 is odd,
// so the 8 K rows a quarter warp reads fall in distinct banks.  Key tiles run from position 0 upward, so
// the first holds position 0, which every query sees: a row's running max is finite from the first tile on.
template <int HS, int BQ, int BKV, int THREADS>
__global__ void __launch_bounds__(THREADS)
prefill_attention(__half* out, const __half* __restrict__ qkv, const __half* __restrict__ k_cache,
                  const __half* __restrict__ v_cache, const float2* __restrict__ rope_cs, int pos0, int n_q,
                  int n_heads, int kv_dim, int kv_mul) {
  using namespace autosched_prefill;
  static_assert(THREADS == 256, "a 16 x 16 grid of threads");
  static_assert(HS % 16 == 0 && HS >= 16 && HS <= 256, "head size: a multiple of 16 up to 256");
  static_assert(BQ % 16 == 0 && BKV % 16 == 0 && BKV % 4 == 0, "query and key tiles: multiples of 16");
  constexpr int RQ = BQ / 16, RK = BKV / 16, RD = HS / 16;
  constexpr int LQ = HS + 4, LP = BKV + 4;
  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);    // [BQ][LQ]
  float* ks = qs + BQ * LQ;                        // [BKV][LQ]
  float* vs = ks + BKV * LQ;                       // [BKV][HS]
  float* ps = vs + BKV * HS;                       // [BQ][LP]

  const int h = blockIdx.y;
  const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ;     // the longest tiles (the last queries) first
  const int kvh = h / kv_mul;
  const int q_dim = n_heads * HS;
  const long long stride = q_dim + 2 * kv_dim;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const float scale = rsqrtf((float)HS);

  // the query tile, RoPE'd in float as the decode step does it; rows past n_q are zero
  for (int i = threadIdx.x; i < BQ * HS / 2; i += THREADS) {
    const int r = i / (HS / 2), j = i % (HS / 2);
    float a = 0.f, b = 0.f;
    if (q0 + r < n_q) {
      const float2 q = __half22float2(*reinterpret_cast<const __half2*>(qkv + (q0 + r) * stride + h * HS + 2 * j));
      const float2 cs = rope_cs[(long long)(pos0 + q0 + r) * (HS / 2) + j];
      a = (q.x * cs.x - q.y * cs.y) * scale;
      b = (q.x * cs.y + q.y * cs.x) * scale;
    }
    qs[r * LQ + 2 * j] = a;
    qs[r * LQ + 2 * j + 1] = b;
  }

  float acc[RQ][RD], m[RQ], l[RQ];
#pragma unroll
  for (int r = 0; r < RQ; ++r) {
    m[r] = neg_inf();
    l[r] = 0.f;
#pragma unroll
    for (int d = 0; d < RD; ++d) acc[r][d] = 0.f;
  }
  // positions the tile's last query sees (its rows past n_q see as many as the last real one)
  const int n_keys = pos0 + min(q0 + BQ, n_q);
  const __half* kbase = k_cache + kvh * HS;
  const __half* vbase = v_cache + kvh * HS;

  for (int k0 = 0; k0 < n_keys; k0 += BKV) {
    __syncthreads();      // the query tile is written; the last tile's K, V and P are read
    for (int i = threadIdx.x; i < BKV * HS / 8; i += THREADS) {
      const int r = i / (HS / 8), c = (i % (HS / 8)) * 8;
      float kf[8], vf[8];
      if (k0 + r < n_keys) {
        const long long off = (long long)(k0 + r) * kv_dim + c;
        unpack8(__ldg(reinterpret_cast<const uint4*>(kbase + off)), kf);
        unpack8(__ldg(reinterpret_cast<const uint4*>(vbase + off)), vf);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) kf[e] = vf[e] = 0.f;
      }
      float4* kd = reinterpret_cast<float4*>(ks + r * LQ + c);
      float4* vd = reinterpret_cast<float4*>(vs + r * HS + c);
      kd[0] = make_float4(kf[0], kf[1], kf[2], kf[3]);
      kd[1] = make_float4(kf[4], kf[5], kf[6], kf[7]);
      vd[0] = make_float4(vf[0], vf[1], vf[2], vf[3]);
      vd[1] = make_float4(vf[4], vf[5], vf[6], vf[7]);
    }
    __syncthreads();

    // scores s[r][c] = q(row ty*RQ + r) . k(key tx + 16 c)
    float s[RQ][RK];
#pragma unroll
    for (int r = 0; r < RQ; ++r)
#pragma unroll
      for (int c = 0; c < RK; ++c) s[r][c] = 0.f;
#pragma unroll 4
    for (int d = 0; d < HS; d += 4) {
      float4 qv[RQ], kv[RK];
#pragma unroll
      for (int r = 0; r < RQ; ++r) qv[r] = *reinterpret_cast<const float4*>(qs + (ty * RQ + r) * LQ + d);
#pragma unroll
      for (int c = 0; c < RK; ++c) kv[c] = *reinterpret_cast<const float4*>(ks + (tx + 16 * c) * LQ + d);
#pragma unroll
      for (int r = 0; r < RQ; ++r)
#pragma unroll
        for (int c = 0; c < RK; ++c)
          s[r][c] += qv[r].x * kv[c].x + qv[r].y * kv[c].y + qv[r].z * kv[c].z + qv[r].w * kv[c].w;
    }

    // online softmax: the causal mask, the new running max, the old sums and outputs rescaled
#pragma unroll
    for (int r = 0; r < RQ; ++r) {
      const int row = ty * RQ + r;
      const int qpos = pos0 + q0 + row;
      float mx = neg_inf();
#pragma unroll
      for (int c = 0; c < RK; ++c) {
        const int key = k0 + tx + 16 * c;
        if (key > qpos || key >= n_keys) s[r][c] = neg_inf();
        mx = fmaxf(mx, s[r][c]);
      }
      const float mn = fmaxf(m[r], half_warp_max(mx));      // finite: see the header
      const float corr = __expf(m[r] - mn);                  // 0 on the first tile (m = -inf)
      float sum = 0.f;
#pragma unroll
      for (int c = 0; c < RK; ++c) {
        const float p = __expf(s[r][c] - mn);
        ps[row * LP + tx + 16 * c] = p;
        sum += p;
      }
      l[r] = l[r] * corr + half_warp_sum(sum);
      m[r] = mn;
#pragma unroll
      for (int d = 0; d < RD; ++d) acc[r][d] *= corr;
    }
    __syncwarp();         // a row's probabilities are written and read by the same half warp

    // acc[r][d] += sum over the tile's keys of p(row, key) * v(key, tx + 16 d)
#pragma unroll 2
    for (int k = 0; k < BKV; k += 4) {
      float4 p4[RQ];
#pragma unroll
      for (int r = 0; r < RQ; ++r) p4[r] = *reinterpret_cast<const float4*>(ps + (ty * RQ + r) * LP + k);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        float v[RD];
#pragma unroll
        for (int d = 0; d < RD; ++d) v[d] = vs[(k + kk) * HS + tx + 16 * d];
#pragma unroll
        for (int r = 0; r < RQ; ++r) {
          const float p = kk == 0 ? p4[r].x : kk == 1 ? p4[r].y : kk == 2 ? p4[r].z : p4[r].w;
#pragma unroll
          for (int d = 0; d < RD; ++d) acc[r][d] += p * v[d];
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < RQ; ++r) {
    const int row = q0 + ty * RQ + r;
    if (row < n_q) {
      const float inv = 1.f / l[r];
      __half* o = out + (long long)row * q_dim + h * HS;
#pragma unroll
      for (int d = 0; d < RD; ++d) o[tx + 16 * d] = __float2half_rn(acc[r][d] * inv);
    }
  }
}

// w (N, K) fp16 = (q - 7) * scale of a q4f16_1 matrix packed by layouts.apply("q4_words" / "q4_scales"):
// nibbles 0 natural, 1 "k" (element e at nibble e/2 + 4 (e%2)), 2 "rows" (rows 2m, 2m+1 share words:
// element e of row 2m + h at nibble 4h + e%4 of packed row 2m + e/4), then (ln, lk) word tiles: packed
// word (r, w) of the (N, K/8) matrix at ((r/ln) (K/8/lk) + w/lk) ln lk + (r%ln) lk + w%lk; scales (N, K/32)
// in (ln, 1) tiles.  A thread a natural word: 8 halves, one 16-byte store.  engine/prefill.py holds a
// numpy twin of this index arithmetic, tested against layouts.apply.
__global__ void dequant_q4(__half* w, const unsigned* __restrict__ a_q, const __half* __restrict__ a_scale, int N,
                           int K, int nibbles, int ln, int lk) {
  const int words = K / 8;
  const long long total = (long long)N * words;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const int r = (int)(i / words), wd = (int)(i % words);
    auto packed = [&](int pr) -> unsigned {
      return __ldg(a_q + ((long long)(pr / ln) * (words / lk) + wd / lk) * ln * lk + (pr % ln) * lk + wd % lk);
    };
    const float s = __half2float(__ldg(a_scale + ((long long)(r / ln) * (K / 32) + wd / 4) * ln + r % ln));
    unsigned lo, hi;          // the word(s) holding elements 0..3 and 4..7
    if (nibbles == 2) {
      lo = packed(r & ~1);
      hi = packed((r & ~1) + 1);
    } else {
      lo = hi = packed(r);
    }
    __align__(16) __half o[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int nib = nibbles == 0 ? e : nibbles == 1 ? e / 2 + 4 * (e % 2) : 4 * (r & 1) + e % 4;
      const unsigned word = e < 4 ? lo : hi;
      o[e] = __float2half_rn((float)((int)((word >> (4 * nib)) & 0xfu) - 7) * s);
    }
    *reinterpret_cast<uint4*>(w + i * 8) = *reinterpret_cast<const uint4*>(o);
  }
}

// w (N, K) fp16 = q (N, K) int8 * scale[row] (fp16)
__global__ void dequant_int8(__half* w, const signed char* __restrict__ q, const __half* __restrict__ scale, int N,
                             int K) {
  const long long total = (long long)N * K;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
    w[i] = __float2half_rn((float)q[i] * __half2float(scale[i / K]));
}

// Kernels of one Llama decode step besides the q4f16_1 GEMV (kernels/gemv_q4f16.cuh), llama2.c
// semantics.  T is the activation type the matmuls read and write (float for the fp32 engine,
// __half otherwise); the residual stream x stays float in every engine, as in llama.cpp and MLC,
// because fp16 residuals drift over 32 layers.
//
// The token and the position live in device memory (token[0], pos[0]) so that one captured CUDA
// graph serves every step: argmax_step writes the next token and advances pos at the end of a step.
//
//   embed_norm      x (dim) = table[token], its activation-type copy, and the first norm's sum of
//                   squares; the other norms' sums zeroed (the matmul epilogues accumulate them)
//   rope_attention  per head: RoPE (cos/sin table rope_cs (seq_len, hs/2)) on q and the new k, the
//                   new k, v appended to the cache, then softmax(q . K[0..pos] / sqrt(hs)) . V[0..pos];
//                   grid (heads, splits): each block a slice of the context (split-KV), merged by
//                   the head's last block
//   gemv_dense      out (N) = W (N, K) . x  for W in float, __half or int8 (with a per-row scale),
//                   with the residual add, RMSNorm and SiLU x up as its epilogue (epilogue.cuh)
//   argmax_step     token = argmax(logits) (first of ties, as numpy), pos += 1; logits -> float;
//                   a block a slice, the last block to finish picks among the slices' winners
//
// Buffers a predecessor in the step writes (activations, the KV cache, token and pos) are read
// with plain loads through pointers that are not `const __restrict__`: a read-only (nc) load of
// one may be hoisted above grid_dependency_wait() and see the previous step's data.
#pragma once
#include <cuda_fp16.h>
#include "epilogue.cuh"
#include "pdl.cuh"

namespace autosched_decode {
using autosched_pdl::grid_dependency_wait;
using autosched_pdl::grid_dependents_launch;
using autosched_pdl::prefetch_l2;

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(signed char v) { return (float)v; }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the result.  `red` holds THREADS / 32 floats.
template <int THREADS>
__device__ __forceinline__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  if (THREADS > 32) {
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    v = 0.f;
#pragma unroll
    for (int w = 0; w < THREADS / 32; ++w) v += red[w];
    __syncthreads();     // red may be reused by the caller's next reduction
  }
  return v;
}

template <int THREADS>
__device__ __forceinline__ float block_max(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (THREADS > 32) {
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    v = red[0];
#pragma unroll
    for (int w = 1; w < THREADS / 32; ++w) v = fmaxf(v, red[w]);
    __syncthreads();
  }
  return v;
}

// E elements of type W from one 16-byte load, as floats
template <typename W> struct Vec16;
template <> struct Vec16<float> {
  static constexpr int E = 4;
  __device__ __forceinline__ static void unpack(uint4 r, float* f) {
    f[0] = __uint_as_float(r.x); f[1] = __uint_as_float(r.y);
    f[2] = __uint_as_float(r.z); f[3] = __uint_as_float(r.w);
  }
};
template <> struct Vec16<__half> {
  static constexpr int E = 8;
  __device__ __forceinline__ static void unpack(uint4 r, float* f) {
    const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      f[2 * i] = p.x;
      f[2 * i + 1] = p.y;
    }
  }
};
template <> struct Vec16<signed char> {
  static constexpr int E = 16;
  __device__ __forceinline__ static void unpack(uint4 r, float* f) {
    const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int b = 0; b < 4; ++b) f[4 * i + b] = (float)(signed char)((w[i] >> (8 * b)) & 0xffu);
  }
};

// E consecutive activations (16-byte aligned) as floats, in 16-byte loads
template <typename X, int E>
__device__ __forceinline__ void load_x(const X* p, float* f) {
  constexpr int XE = Vec16<X>::E;
  if constexpr (E % XE == 0) {
#pragma unroll
    for (int c = 0; c < E / XE; ++c) Vec16<X>::unpack(reinterpret_cast<const uint4*>(p)[c], f + c * XE);
  } else {        // fewer activations than a 16-byte vector (fp32 weights, fp16 activations)
#pragma unroll
    for (int e = 0; e < E; ++e) f[e] = to_f(p[e]);
  }
}

// One warp's dot product of a weight row (K elements of W, 16-byte aligned) with x: 16-byte weight
// loads, UNROLL in flight per lane, float accumulation; every lane gets the sum.  x is read with
// plain loads (a predecessor, or an earlier phase of the persistent step, wrote it).
template <typename W, typename X, int UNROLL>
__device__ __forceinline__ float row_dot(const W* __restrict__ w_row, const X* x, int K, int lane) {
  using V = Vec16<W>;
  constexpr int E = V::E;
  float acc = 0.f;
  const uint4* wr = reinterpret_cast<const uint4*>(w_row);
  const int nvec = K / E;
  int v = lane;
  for (; v + (UNROLL - 1) * 32 < nvec; v += UNROLL * 32) {
    uint4 r[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) r[u] = __ldg(wr + v + u * 32);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      float f[E], xf[E];
      V::unpack(r[u], f);
      load_x<X, E>(x + (v + u * 32) * E, xf);
#pragma unroll
      for (int e = 0; e < E; ++e) acc += f[e] * xf[e];
    }
  }
  for (; v < nvec; v += 32) {
    float f[E], xf[E];
    V::unpack(__ldg(wr + v), f);
    load_x<X, E>(x + v * E, xf);
#pragma unroll
    for (int e = 0; e < E; ++e) acc += f[e] * xf[e];
  }
  return warp_sum(acc);
}

}  // namespace autosched_decode

// x (dim) = table[token]; xa, its copy in the activation type, is the first matmul's V; ss[0] = the
// sum of its squares (the first norm's input); ss[1 .. n_ss) zeroed for the matmul epilogues that
// accumulate into them later in the step.  One block: dim is a few thousand elements.
template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS)
embed_norm(float* x, T* xa, double* ss, int n_ss, const float* __restrict__ table, const int* token, int dim) {
  using namespace autosched_decode;
  __shared__ float red[THREADS / 32];
  // waits before it lets the step's next kernels start: rope_attention reads pos, which the last
  // step's argmax_step writes, before its own wait (so no kernel of this step may run before that)
  grid_dependency_wait();
  grid_dependents_launch();
  const float* row = table + (long long)token[0] * dim;
  float sq = 0.f;
  for (int i = threadIdx.x; i < dim; i += THREADS) {
    const float v = row[i];
    x[i] = v;
    xa[i] = from_f<T>(v);
    sq += v * v;
  }
  sq = block_sum<THREADS>(sq, red);
  if (threadIdx.x == 0) ss[0] = sq;
  for (int i = 1 + threadIdx.x; i < n_ss; i += THREADS) ss[i] = 0.0;
}

// Two blocks an SM (the register budget this gives, 128 a thread, holds a warp's batch of K/V
// pairs), and the host sizes split-KV to fill exactly that many blocks (templates/decode.py:
// attention_splits).
constexpr int ATTENTION_BLOCKS_PER_SM = 2;

// Dynamic shared memory: at least 2 * THREADS / 32 floats, each warp's max and sum for the merge
// (templates/decode.py: attention_smem_bytes; the persistent step's buffer, a chunk of rows, is larger).
// head_size * sizeof(T) must be a multiple of 16 (the launcher checks), head_size <= THREADS.
// Split-KV: past 2 * KPRE * THREADS / 32 positions, of the gridDim.y blocks of a head, as many as
// give slices of >= 64 positions take a slice of the context each and write a partial (max, sum,
// unnormalized output) to part; the last of them to finish (a ticket in count[h], which it resets
// for the next step) merges them, so there is no second launch.
//
// Inside a block each warp walks its own positions (t0 + warp, t0 + warp + warps, ...) with an
// online softmax, KPRE positions a batch, and the warps merge once through shared memory.  A lane
// holds the head's dimension pairs j = lane + 32 i (i < PAIRS): RoPE rotates a pair, so q, the
// new k and every K/V row stay in registers and the scores need only warp shuffles.  At a short
// context the time is a chain of dependent steps, not bandwidth (H100, 7B q4f16_1, contexts under
// 110: the block-wide version, a thread a position and eight barriers, took 8.4 us of the step
// after the qkv matmul, of which 0.6 us was the wait itself; this one's block is done 1.8 us after
// its wait).
//
// attention_item is one block's work, (head h, slice split of nsplit): the kernel below runs one
// a block, the dataflow step (dataflow_step.cuh) walks them.  `wait()` is where the kernel waits
// for its predecessor; red holds THREADS * 8 floats, and `ticket` is a shared word.  Every early
// return is uniform over the block.
namespace autosched_decode {
// Two consecutive elements of T: Raw is what a register holds between the load and the use.
template <typename T> struct Pair;
template <> struct Pair<__half> {
  using Raw = unsigned;
  __device__ __forceinline__ static Raw load(const __half* p) { return *reinterpret_cast<const unsigned*>(p); }
  // a cache row written by an earlier step: volatile, so the compiler keeps the load where it is
  // written (ahead of wait()) instead of sinking it to its first use
  __device__ __forceinline__ static Raw load_early(const __half* p) {
    unsigned r;
    asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(r) : "l"(p));
    return r;
  }
  __device__ __forceinline__ static float2 f(Raw r) { return __half22float2(*reinterpret_cast<const __half2*>(&r)); }
  __device__ __forceinline__ static Raw raw(float2 v) {
    const __half2 h = __floats2half2_rn(v.x, v.y);
    return *reinterpret_cast<const unsigned*>(&h);
  }
  __device__ __forceinline__ static Raw zero() { return 0u; }
};
template <> struct Pair<float> {
  using Raw = float2;
  __device__ __forceinline__ static Raw load(const float* p) { return *reinterpret_cast<const float2*>(p); }
  __device__ __forceinline__ static Raw load_early(const float* p) {
    float2 r;
    asm volatile("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(r.x), "=f"(r.y) : "l"(p));
    return r;
  }
  __device__ __forceinline__ static float2 f(Raw r) { return r; }
  __device__ __forceinline__ static Raw raw(float2 v) { return v; }
  __device__ __forceinline__ static Raw zero() { return make_float2(0.f, 0.f); }
};

// KPRE: positions a warp has in flight (its first batch is loaded before wait()); PAIRS: dimension
// pairs a lane holds, ceil(head_size / 64).
template <typename T, int THREADS, typename Wait, int KPRE = 8, int PAIRS = 2>
__device__ __forceinline__ void attention_item(T* out, float* part, unsigned* count, const T* qkv, T* k_cache,
                                               T* v_cache, const int* pos_p, const float2* __restrict__ rope_cs,
                                               int n_heads, int kv_dim, int head_size, int kv_mul, int h, int split,
                                               int nsplit, float* smem, float* red, unsigned& ticket, Wait wait) {
  static_assert(THREADS % 32 == 0 && THREADS <= 256, "whole warps; red holds THREADS * 8 floats");
  static_assert(KPRE >= 1 && PAIRS >= 1 && PAIRS <= 4, "a head of at most 256 dimensions");
  using P = Pair<T>;
  using Raw = typename P::Raw;
  constexpr int NW = THREADS / 32;
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;

  // Before the dependency wait, everything that does not come from this step's qkv, so that its
  // round trips overlap the qkv matmul's tail: pos (argmax_step of the last step wrote it, and
  // embed_norm lets no kernel of this step start before that finished), the cos/sin of pos, and
  // the warp's first batch of K and V rows (cache rows before pos, written by earlier steps).
  const int pos = pos_p[0];
  // one slice while the context fits two of a warp's batches (128 positions at 8 warps x 8): a
  // second batch costs a round trip, the merge three (H100, 7B q4f16_1 at positions 72-120: 2.2 us
  // a layer against 3.1 split); past that, slices of at least 64 positions
  const int n = pos + 1;
  const int splits = n <= 2 * NW * KPRE ? 1 : min(nsplit, (pos + 64) / 64);
  if (split >= splits) return;
  const int kv_off = (h / kv_mul) * head_size;
  const int q_dim = n_heads * head_size;
  const int chunk = (n + splits - 1) / splits;
  const int t0 = split * chunk, t1 = min(n, t0 + chunk);
  const int npair = head_size / 2;
  bool has[PAIRS];
  float2 cs[PAIRS];           // cos, sin of pos * theta^(-2j/hs), from a host table (HF's float32)
#pragma unroll
  for (int i = 0; i < PAIRS; ++i) {
    const int j = lane + 32 * i;
    has[i] = j < npair;
    cs[i] = has[i] ? rope_cs[(long long)pos * npair + j] : make_float2(0.f, 0.f);
  }
  const T* krow = k_cache + kv_off + 2 * lane;
  const T* vrow = v_cache + kv_off + 2 * lane;
  Raw kr[KPRE][PAIRS], vr[KPRE][PAIRS];
  auto load_batch = [&](int tb) {      // positions tb, tb + NW, ... (KPRE of them)
#pragma unroll
    for (int b = 0; b < KPRE; ++b) {
      const int t = tb + NW * b;
      const bool ok = t < t1 && t != pos;
#pragma unroll
      for (int i = 0; i < PAIRS; ++i) {
        const long long o = (long long)t * kv_dim + 64 * i;
        kr[b][i] = ok && has[i] ? P::load_early(krow + o) : P::zero();
        vr[b][i] = ok && has[i] ? P::load_early(vrow + o) : P::zero();
      }
    }
  };
  const int first = t0 + w;
  load_batch(first);
  wait();

  // this step's q, k and v of the head (plain loads: the qkv matmul before us wrote them); RoPE on
  // q and k, k rounded to the cache type so that position pos scores the same now as in later steps
  float2 q[PAIRS], kn[PAIRS], vn[PAIRS];
#pragma unroll
  for (int i = 0; i < PAIRS; ++i) {
    const int d = 2 * (lane + 32 * i);
    q[i] = kn[i] = vn[i] = make_float2(0.f, 0.f);
    if (has[i]) {
      const float2 a = P::f(P::load(qkv + h * head_size + d));
      const float2 k = P::f(P::load(qkv + q_dim + kv_off + d));
      q[i] = make_float2(a.x * cs[i].x - a.y * cs[i].y, a.x * cs[i].y + a.y * cs[i].x);
      kn[i] = P::f(P::raw(make_float2(k.x * cs[i].x - k.y * cs[i].y, k.x * cs[i].y + k.y * cs[i].x)));
      vn[i] = P::f(P::load(qkv + q_dim + kv_dim + kv_off + d));
    }
  }
  // one block per kv head appends to the cache; the others use their own copy of position pos
  if (h % kv_mul == 0 && split == 0 && w == 0) {
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
      if (!has[i]) continue;
      const long long o = (long long)pos * kv_dim + kv_off + 2 * (lane + 32 * i);
      *reinterpret_cast<Raw*>(k_cache + o) = P::raw(kn[i]);
      *reinterpret_cast<Raw*>(v_cache + o) = P::raw(vn[i]);
    }
  }
  const float scale = rsqrtf((float)head_size);

  // the warp's online softmax: running max m, sum l, unnormalized output acc (the lane's pairs)
  float m = neg_inf(), l = 0.f;
  float2 acc[PAIRS];
#pragma unroll
  for (int i = 0; i < PAIRS; ++i) acc[i] = make_float2(0.f, 0.f);
  for (int tb = first; tb < t1; tb += NW * KPRE) {
    if (tb != first) load_batch(tb);
    float s[KPRE];
#pragma unroll
    for (int b = 0; b < KPRE; ++b) {
      const bool now = tb + NW * b == pos;
      float a = 0.f;
#pragma unroll
      for (int i = 0; i < PAIRS; ++i) {
        const float2 k = now ? kn[i] : P::f(kr[b][i]);
        a += q[i].x * k.x + q[i].y * k.y;
      }
      s[b] = a;
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
#pragma unroll
      for (int b = 0; b < KPRE; ++b) s[b] += __shfl_xor_sync(0xffffffffu, s[b], o);
    float bm = neg_inf();
#pragma unroll
    for (int b = 0; b < KPRE; ++b) {
      s[b] = tb + NW * b < t1 ? s[b] * scale : neg_inf();
      bm = fmaxf(bm, s[b]);
    }
    const float mn = fmaxf(m, bm);        // finite: position tb is in the slice
    const float corr = __expf(m - mn);    // 0 on the first batch (m = -inf)
    l *= corr;
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
      acc[i].x *= corr;
      acc[i].y *= corr;
    }
#pragma unroll
    for (int b = 0; b < KPRE; ++b) {
      const float p = __expf(s[b] - mn);  // 0 past the slice
      const bool now = tb + NW * b == pos;
      l += p;
#pragma unroll
      for (int i = 0; i < PAIRS; ++i) {
        const float2 v = now ? vn[i] : P::f(vr[b][i]);
        acc[i].x += p * v.x;
        acc[i].y += p * v.y;
      }
    }
    m = mn;
  }

  // the warps' (m, l, acc) merged: thread d < head_size sums dimension d
  float* ml = smem;         // 2 * NW floats
  if (lane == 0) {
    ml[w] = m;              // -inf for a warp with no position, whose l and acc are 0
    ml[NW + w] = l;
  }
#pragma unroll
  for (int i = 0; i < PAIRS; ++i) {
    if (!has[i]) continue;
    const int d = 2 * (lane + 32 * i);
    red[w * head_size + d] = acc[i].x;
    red[w * head_size + d + 1] = acc[i].y;
  }
  __syncthreads();
  float mx = neg_inf();
#pragma unroll
  for (int ww = 0; ww < NW; ++ww) mx = fmaxf(mx, ml[ww]);
  float sum = 0.f, o = 0.f;
#pragma unroll
  for (int ww = 0; ww < NW; ++ww) {
    const float f = ml[ww] == neg_inf() ? 0.f : __expf(ml[ww] - mx);
    sum += ml[NW + ww] * f;
    if (threadIdx.x < head_size) o += red[ww * head_size + threadIdx.x] * f;
  }
  if (splits == 1) {
    if (threadIdx.x < head_size) out[h * head_size + threadIdx.x] = from_f<T>(o / sum);
    return;
  }
  float* p = part + ((long long)h * nsplit + split) * (head_size + 2);
  if (threadIdx.x < head_size) p[2 + threadIdx.x] = o;
  if (threadIdx.x == 0) {
    p[0] = mx;        // -inf for an empty slice, whose sum and output are 0
    p[1] = sum;
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) ticket = atomicAdd(count + h, 1u);
  __syncthreads();
  if (ticket != splits - 1) return;
  __threadfence();
  // the last block of head h: merge the partials (read through L2: other SMs wrote them)
  const float* ph = part + (long long)h * nsplit * (head_size + 2);
  float mm = neg_inf();
  for (int s = 0; s < splits; ++s) mm = fmaxf(mm, __ldcg(ph + s * (head_size + 2)));
  if (threadIdx.x < head_size) {
    float tot = 0.f, a = 0.f;
    for (int s = 0; s < splits; ++s) {
      const float* ps = ph + s * (head_size + 2);
      const float ls = __ldcg(ps + 1);
      if (ls == 0.f) continue;       // empty slice
      const float f = __expf(__ldcg(ps) - mm);
      tot += ls * f;
      a += __ldcg(ps + 2 + threadIdx.x) * f;
    }
    out[h * head_size + threadIdx.x] = from_f<T>(a / tot);
  }
  if (threadIdx.x == 0) count[h] = 0;      // ready for the next step
}
}  // namespace autosched_decode

namespace autosched_decode {
// Share b of `shares` of [pf, pf + bytes) asked of the L2 in one bulk prefetch (16-byte aligned;
// a tail under 16 bytes is left).
__device__ __forceinline__ void prefetch_share_l2(const char* pf, long long bytes, long long b, long long shares) {
#if __CUDA_ARCH__ >= 900
  const long long share = ((bytes + shares - 1) / shares + 15) / 16 * 16;
  const long long lo = b * share, hi = min(bytes / 16 * 16, lo + share);
  if (hi > lo) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(pf + lo), "r"((unsigned)(hi - lo)) : "memory");
#endif
}

// rope_attention's wait: the dependency wait, then (pf non-null) a share of [pf, pf + pf_bytes)
// asked of the L2 by thread 0 of each block of the first slice (a block of every head exists at any
// context and gets past its wait): the next matmuls' weights stream in while attention, a chain of
// round trips at a short context, leaves HBM idle (H100, 7B q4f16_1: 16 MB of gate_up's 45 moved
// the step 0.6 points of its bandwidth limit; o's own weights, already prefetched by o's blocks,
// nothing).
struct PdlWaitThenPrefetch {
  const char* pf;
  long long pf_bytes;
  __device__ __forceinline__ void operator()() const {
    grid_dependency_wait();
    if (pf != nullptr && blockIdx.y == 0 && threadIdx.x == 0) prefetch_share_l2(pf, pf_bytes, blockIdx.x, gridDim.x);
  }
};
}  // namespace autosched_decode

// pf: nullptr, or 16-byte aligned weights to stream into the L2 right after the wait
// (PdlWaitThenPrefetch; issued after the attention instead, or by every block, the 7B step was
// slower: H100, 2026-11-26).
template <typename T, int THREADS, int KPRE, int PAIRS>
__global__ void __launch_bounds__(THREADS, ATTENTION_BLOCKS_PER_SM)
rope_attention(T* out, float* part, unsigned* count, const T* qkv, T* k_cache, T* v_cache, const int* pos_p, const float2* __restrict__ rope_cs, int n_heads, int kv_dim,
               int head_size, int kv_mul, const char* pf, long long pf_bytes) {
  using namespace autosched_decode;
  extern __shared__ float smem[];
  __shared__ float red[THREADS * 8];
  __shared__ unsigned ticket;
  grid_dependents_launch();
  attention_item<T, THREADS, PdlWaitThenPrefetch, KPRE, PAIRS>(
      out, part, count, qkv, k_cache, v_cache, pos_p, rope_cs, n_heads, kv_dim, head_size, kv_mul, blockIdx.x,
      blockIdx.y, gridDim.y, smem, red, ticket, PdlWaitThenPrefetch{pf, pf_bytes});
}

// One warp per row, 16-byte weight loads, UNROLL loads in flight per lane, float accumulation, and
// a decode step's epilogue EPI on the row sums (epilogue.cuh; STORE writes them).
// W rows must start 16-byte aligned (K * sizeof(W) % 16 == 0: the launcher checks).  scale: one
// fp16 per row for int8 weights, null otherwise.
template <typename W, typename X, typename O, int WARPS, int UNROLL, int EPI>
__global__ void __launch_bounds__(WARPS * 32)
gemv_dense(O* out, const W* __restrict__ w, const __half* __restrict__ scale, const X* x, int N, int K,
           float* res, const double* ss_in, double* ss_out, int dim, float eps) {
  using namespace autosched_decode;
  constexpr bool STAGE = EPI == autosched_epi::RESIDUAL || EPI == autosched_epi::NORM_SWIGLU;
  static_assert(EPI != autosched_epi::NORM_SWIGLU || WARPS % 2 == 0, "gate/up row pairs in one block");
  const int row = blockIdx.x * WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int rows = min(WARPS, N - (int)blockIdx.x * WARPS);
  prefetch_l2(w + (long long)blockIdx.x * WARPS * K, (long long)rows * K * sizeof(W), threadIdx.x, WARPS * 32,
              gridDim.x);
  grid_dependents_launch();
  grid_dependency_wait();
  float acc = 0.f;
  if (row < N) {
    acc = row_dot<W, X, UNROLL>(w + (long long)row * K, x, K, lane);
    if (scale != nullptr) acc *= __half2float(scale[row]);
  }
  // read at the end: held through the loop, it made ptxas spill at the 32 registers it aims for here
  const autosched_epi::Args ea{res, ss_in, ss_out, dim, eps};
  const float nscale = EPI == autosched_epi::NORM || EPI == autosched_epi::NORM_SWIGLU ? autosched_epi::norm_scale(ea) : 1.f;
  if constexpr (STAGE) {
    __shared__ float fin[WARPS];
    if (lane == 0) fin[threadIdx.x / 32] = acc;
    __syncthreads();
    autosched_epi::finish<EPI, WARPS * 32>(fin, WARPS, blockIdx.x * WARPS, N, out, ea, nscale);
  } else if (row < N && lane == 0) {
    out[row] = from_f<O>(EPI == autosched_epi::NORM ? acc * nscale : acc);
  }
}

// (value, index) of the larger of two candidates, the first index on ties (as numpy's argmax);
// a NaN never wins, so all-NaN logits leave the index at INT_MAX
__device__ __forceinline__ void better_of(float& v, int& i, float ov, int oi) {
  if (ov > v || (ov == v && oi < i)) {
    v = ov;
    i = oi;
  }
}

// The block's best candidate in thread 0's (v, i): a butterfly in each warp (every lane ends with
// the warp's best: better_of is a total order, so either order of a pair picks the same), then warp
// 0 over the warps' bests.  bv, bi hold THREADS / 32 entries.  Every thread calls it.
template <int THREADS>
__device__ __forceinline__ void block_argmax(float& v, int& i, float* bv, int* bi) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps");
#pragma unroll
  for (int o = 16; o > 0; o /= 2)
    better_of(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
  if (lane == 0) {
    bv[w] = v;
    bi[w] = i;
  }
  __syncthreads();
  if (w == 0) {
    v = lane < THREADS / 32 ? bv[lane] : autosched_decode::neg_inf();
    i = lane < THREADS / 32 ? bi[lane] : 0x7fffffff;
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
      better_of(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
  }
  __syncthreads();       // bv, bi may be reused by the caller's next reduction
}

// token[0] = first index of the largest logit, pos[0] += 1, and the logits as float.  The blocks
// each take a slice of the logits (one block walking all 32000 took 17 us of a step) and leave
// their winner in (part_v, part_i); the last block to finish (a ticket in count, which it resets
// for the next step) picks among them.
template <typename T, int THREADS>
__global__ void __launch_bounds__(THREADS)
argmax_step(float* out, const T* logits, int n, int* token, int* pos, float* part_v, int* part_i,
            unsigned* count) {
  using namespace autosched_decode;
  __shared__ float bv[THREADS / 32];
  __shared__ int bi[THREADS / 32];
  __shared__ unsigned ticket;
  grid_dependents_launch();
  grid_dependency_wait();
  const int per = (n + gridDim.x - 1) / gridDim.x;
  const int lo = blockIdx.x * per, hi = min(n, lo + per);
  float v = neg_inf();
  int i = 0x7fffffff;
  // LOADS logits a thread in flight before it stores any: out may alias logits as far as the
  // compiler knows, so it keeps a load after an earlier store (in the 7B step this and the
  // shuffle reductions below moved the decode rate by ~0.05%: step_variants_ab.py, H100, 2026-11-27)
  constexpr int LOADS = 8;
  for (int j0 = lo + threadIdx.x; j0 < hi; j0 += LOADS * THREADS) {
    float xs[LOADS];
#pragma unroll
    for (int u = 0; u < LOADS; ++u) xs[u] = j0 + u * THREADS < hi ? to_f(logits[j0 + u * THREADS]) : 0.f;
#pragma unroll
    for (int u = 0; u < LOADS; ++u) {
      const int j = j0 + u * THREADS;
      if (j < hi) {
        out[j] = xs[u];
        better_of(v, i, xs[u], j);
      }
    }
  }
  block_argmax<THREADS>(v, i, bv, bi);
  if (threadIdx.x == 0) {
    part_v[blockIdx.x] = v;
    part_i[blockIdx.x] = i;
    __threadfence();
    ticket = atomicAdd(count, 1u);
  }
  __syncthreads();
  if (ticket != gridDim.x - 1) return;
  __threadfence();
  v = neg_inf();
  i = 0x7fffffff;
  for (int b = threadIdx.x; b < gridDim.x; b += THREADS) better_of(v, i, __ldcg(part_v + b), __ldcg(part_i + b));
  block_argmax<THREADS>(v, i, bv, bi);
  if (threadIdx.x == 0) {
    token[0] = i < n ? i : 0;              // all-NaN logits: the host sees them in `out`
    pos[0] += 1;
    count[0] = 0;                          // ready for the next step
  }
}

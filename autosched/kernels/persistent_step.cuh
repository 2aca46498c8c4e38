// The whole fp16 decode step as one cooperative kernel: the phases the per-kernel step launches
// (kernels/decode.cuh, epilogue.cuh) run one after another inside a grid of co-resident blocks, a
// grid-wide barrier between dependent phases instead of a kernel boundary.
//
//   embed      x = table[token], x16 = half(x); block 0: ss[0] = sum x^2, ss[1 ..] = 0      | sync
//   per layer l (weights wt[4 l + 0..3] = W_qkv, W_o, W_gu, W_down, norm weights folded in):
//     qkv      qkv = W_qkv . x16 * rsqrt(ss[2l] / dim + eps)                                  | sync
//     attn     items (head, slice): RoPE, KV append, split-KV attention, last slice merges    | sync
//     o        x += W_o . att;  x16 = x;  ss[2l+1] += sum x^2                                  | sync
//     gate_up  hb = silu(g) * u,  (g, u) = W_gu . x16 * rsqrt(ss[2l+1] / dim + eps)         | sync
//     down     x += W_down . hb;  x16 = x;  ss[2l+2] += sum x^2                               | sync
//   cls        logits = W_cls . x16 * rsqrt(ss[2L] / dim + eps), each block's argmax; the last
//              block to finish (ticket) picks the token and advances pos
//
// Work partition (templates/persistent.py models it): a matmul's rows, in units of 1 row (2 for
// gate_up, whose epilogue pairs gate and up), are cut into gridDim.x contiguous spans, block b's
// [b U / G, (b + 1) U / G); a block walks its span CHUNK rows at a time, a warp a row (row_dot),
// and applies the epilogue to the chunk (autosched_epi::finish).  Attention items i = split *
// n_heads + h, i < n_heads * nsplit, go to blocks i, i + G, ...
//
// Memory ordering.  Data one phase writes and a later phase reads (x, x16, ss, qkv, att, hb, part,
// count) is read with plain or ld.cg loads, never the read-only path, and only after a grid_sync,
// whose arrive is a release (bar.sync, then fence + atomic by thread 0) and whose wait an acquire
// (ld.acquire, fence, then bar.sync), as cooperative groups' grid sync does.  Weights, the
// embedding, the rope table and cache rows before pos (earlier launches wrote them) may take __ldg.
// The barrier needs every block co-resident: the host launches cooperatively (the driver refuses a
// grid that does not fit) with a grid of at most the occupancy's blocks.
//
// Phase timeline (-DAUTOSCHED_PHASE_TIMES only; engine/phase_times.py builds, runs and reads it):
// ncu sees one kernel, so to tell barrier waits from idle blocks from the matmuls themselves every
// block's thread 0 writes %globaltimer (ns) into an extra last argument, phase_times[(p * G + b) * 3
// + k], k = 0 the phase's start, 1 its end (after a __syncthreads: the whole block's end), 2 the exit
// of the grid barrier after it.  Phases p in order, 5 L + 3 of them (the per-kernel step's launches):
// 0 embed; 1 + 5 l + (0 qkv, 1 attn, 2 o, 3 gate_up, 4 down); 5 L + 1 cls (matmul, block argmax,
// ticket; no barrier); 5 L + 2 argmax (the last block only).  Entries a block does not write stay as
// the host left them (0).  Without the macro the marks expand to nothing and the kernel, its name
// and its arguments are those of the plain build.
#pragma once
#include <cuda_fp16.h>
#include "decode.cuh"     // and epilogue.cuh

namespace autosched_persist {
using namespace autosched_decode;

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Grid-wide barrier over gridDim.x co-resident blocks.  bar[0] counts arrivals, bar[1] is the
// generation; both start at 0 (the host zeroes them once) and bar[0] is back at 0 after every
// barrier, so the state carries over from launch to launch.  A block reads the generation before
// it arrives: the last arrival cannot have bumped it yet (this block's arrival comes first), and
// it is at least the value this block saw leave the previous barrier (coherence).
__device__ __forceinline__ void grid_sync(unsigned* bar) {
  __syncthreads();                      // the block's writes, before thread 0's release
  if (threadIdx.x == 0) {
    const unsigned gen = ld_acquire(bar + 1);
    __threadfence();
    if (atomicAdd(bar, 1u) == gridDim.x - 1) {
      atomicExch(bar, 0u);              // before the release: no block arrives again until it sees gen + 1
      __threadfence();
      st_release(bar + 1, gen + 1);
    } else {
      while (ld_acquire(bar + 1) == gen) __nanosleep(32);
    }
    __threadfence();
  }
  __syncthreads();                      // the rest of the block, after thread 0's acquire
}

struct NoWait {     // the phases before attention ran in this kernel, ordered by grid_sync
  __device__ void operator()() const {}
};

// [lo, hi): block b's span of `units` units over G blocks (every unit in exactly one span)
__device__ __forceinline__ int span_lo(int units, int b, int G) { return (int)((long long)units * b / G); }

// Rows [lo, hi) of W (N, K) . x, CHUNK rows at a time: warp w takes rows w, w + WARPS, ... of the
// chunk, lane 0 leaves the sum in fin[i]; then done(fin, rows, row0) with the whole block, fin
// complete.  Ends synchronized (fin may be reused).
template <int THREADS, int CHUNK, int UNROLL, typename Done>
__device__ __forceinline__ void matmul_rows(const __half* __restrict__ w, const __half* x, int K, int lo, int hi,
                                            float* fin, Done done) {
  constexpr int WARPS = THREADS / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int row0 = lo; row0 < hi; row0 += CHUNK) {
    const int rows = min(CHUNK, hi - row0);
    for (int i = warp; i < rows; i += WARPS) {
      const float acc = row_dot<__half, __half, UNROLL>(w + (long long)(row0 + i) * K, x, K, lane);
      if (lane == 0) fin[i] = acc;
    }
    __syncthreads();
    done(fin, rows, row0);
    __syncthreads();
  }
}

#if defined(AUTOSCHED_PHASE_TIMES)
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  // "memory": the compiler keeps the read between the phase's loads and stores, where it is written
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
  return t;
}
#endif

}  // namespace autosched_persist

#if defined(AUTOSCHED_PHASE_TIMES)
#define AUTOSCHED_PHASE_ARG , unsigned long long* __restrict__ phase_times
#define AUTOSCHED_MARK(p, k)                                                                          \
  do {                                                                                                \
    if (threadIdx.x == 0)                                                                             \
      phase_times[((long long)(p) * gridDim.x + blockIdx.x) * 3 + (k)] = autosched_persist::global_ns(); \
  } while (0)
// the block's end, not thread 0's: the extra __syncthreads is the instrumented build's only other cost
#define AUTOSCHED_MARK_END(p) \
  do {                        \
    __syncthreads();          \
    AUTOSCHED_MARK(p, 1);     \
  } while (0)
#else
#define AUTOSCHED_PHASE_ARG
#define AUTOSCHED_MARK(p, k) ((void)0)
#define AUTOSCHED_MARK_END(p) ((void)0)
#endif

// Dynamic shared memory: max(2 * THREADS / 32, CHUNK) floats (attention_item's merge, a chunk of
// finished rows) -- the host sizes it.
// part: (n_heads, nsplit, head_size + 2) floats; count: n_heads tickets, 0 between steps;
// best_v, best_i: gridDim.x each; best_count: 1 ticket; bar: 2 words (grid_sync).
// wt: (n_layers, 4) weight pointers (qkv, o, gate_up, down); caches (n_layers, seq_len, kv_dim).
template <int THREADS, int MIN_BLOCKS, int CHUNK, int UNROLL, int KPRE, int PAIRS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
persistent_step(float* x, __half* x16, double* ss, __half* qkv, __half* att, __half* hb, __half* logits,
                float* logits_f, float* part, unsigned* count, float* best_v, int* best_i, unsigned* best_count,
                unsigned* bar, int* token, int* pos, const float* __restrict__ table,
                const float2* __restrict__ rope_cs, const __half* const* __restrict__ wt,
                const __half* __restrict__ w_cls, __half* k_cache, __half* v_cache, int dim, int hidden,
                int n_layers, int n_heads, int kv_dim, int head_size, int seq_len, int vocab, int nsplit,
                float eps AUTOSCHED_PHASE_ARG) {
  using namespace autosched_persist;
  namespace epi = autosched_epi;
  static_assert(THREADS % 64 == 0 && THREADS <= 256, "an even number of whole warps; attention_item takes <= 256");
  static_assert(CHUNK % 2 == 0 && CHUNK <= THREADS * 8, "gate/up pairs stay in one chunk");
  extern __shared__ float smem[];
  __shared__ float red[THREADS * 8];
  __shared__ unsigned ticket;
  __shared__ float bv[THREADS / 32];
  __shared__ int bi[THREADS / 32];
  const int G = gridDim.x, b = blockIdx.x;
  const int q_dim = n_heads * head_size, n_qkv = q_dim + 2 * kv_dim, n_ss = 2 * n_layers + 1;
  const int kv_mul = n_heads / (kv_dim / head_size);
  float* fin = smem;

  // -- embed --------------------------------------------------------------------------------
  {
    AUTOSCHED_MARK(0, 0);
    const float* row = table + (long long)token[0] * dim;
    for (int i = b * THREADS + threadIdx.x; i < dim; i += G * THREADS) {
      const float v = row[i];
      x[i] = v;
      x16[i] = __float2half_rn(v);
    }
    if (b == 0) {
      float sq = 0.f;
      for (int i = threadIdx.x; i < dim; i += THREADS) sq += row[i] * row[i];
      sq = block_sum<THREADS>(sq, red);
      if (threadIdx.x == 0) ss[0] = sq;
      for (int i = 1 + threadIdx.x; i < n_ss; i += THREADS) ss[i] = 0.0;
    }
    AUTOSCHED_MARK_END(0);
    grid_sync(bar);
    AUTOSCHED_MARK(0, 2);
  }

  for (int l = 0; l < n_layers; ++l) {
    const __half* const* w = wt + 4 * l;
    __half* kc = k_cache + (long long)l * seq_len * kv_dim;
    __half* vc = v_cache + (long long)l * seq_len * kv_dim;
    const int ph = 1 + 5 * l;     // this layer's first phase (the timeline's index; unused otherwise)
    (void)ph;
    // -- qkv = W_qkv . x16 * norm -------------------------------------------------------------
    {
      AUTOSCHED_MARK(ph, 0);
      const float s = epi::norm_scale(epi::Args{nullptr, ss + 2 * l, nullptr, dim, eps});
      matmul_rows<THREADS, CHUNK, UNROLL>(w[0], x16, dim, span_lo(n_qkv, b, G), span_lo(n_qkv, b + 1, G), fin,
                                          [&](const float* f, int rows, int row0) {
                                            for (int i = threadIdx.x; i < rows; i += THREADS)
                                              qkv[row0 + i] = __float2half_rn(f[i] * s);
                                          });
      AUTOSCHED_MARK_END(ph);
      grid_sync(bar);
      AUTOSCHED_MARK(ph, 2);
    }
    // -- RoPE, KV append, attention ------------------------------------------------------------
    AUTOSCHED_MARK(ph + 1, 0);
    for (int it = b; it < n_heads * nsplit; it += G) {
      attention_item<__half, THREADS, NoWait, KPRE, PAIRS>(att, part, count, qkv, kc, vc, pos, rope_cs, n_heads, kv_dim, head_size, kv_mul,
                                      it % n_heads, it / n_heads, nsplit, smem, red, ticket, NoWait{});
      __syncthreads();     // the next item rewrites smem and red
    }
    AUTOSCHED_MARK_END(ph + 1);
    grid_sync(bar);
    AUTOSCHED_MARK(ph + 1, 2);
    // -- x += W_o . att (residual; ss[2l+1]) ------------------------------------------------------
    {
      AUTOSCHED_MARK(ph + 2, 0);
      const epi::Args ea{x, nullptr, ss + 2 * l + 1, dim, eps};
      matmul_rows<THREADS, CHUNK, UNROLL>(w[1], att, q_dim, span_lo(dim, b, G), span_lo(dim, b + 1, G), fin,
                                          [&](const float* f, int rows, int row0) {
                                            epi::finish<epi::RESIDUAL, THREADS>(f, rows, row0, dim, x16, ea, 1.f);
                                          });
      AUTOSCHED_MARK_END(ph + 2);
      grid_sync(bar);
      AUTOSCHED_MARK(ph + 2, 2);
    }
    // -- hb = silu(g) * u (norm of ss[2l+1]); rows in pairs -----------------------------------------
    {
      AUTOSCHED_MARK(ph + 3, 0);
      const epi::Args ea{nullptr, ss + 2 * l + 1, nullptr, dim, eps};
      const float s = epi::norm_scale(ea);
      matmul_rows<THREADS, CHUNK, UNROLL>(w[2], x16, dim, 2 * span_lo(hidden, b, G), 2 * span_lo(hidden, b + 1, G),
                                          fin, [&](const float* f, int rows, int row0) {
                                            epi::finish<epi::NORM_SWIGLU, THREADS>(f, rows, row0, 2 * hidden, hb, ea, s);
                                          });
      AUTOSCHED_MARK_END(ph + 3);
      grid_sync(bar);
      AUTOSCHED_MARK(ph + 3, 2);
    }
    // -- x += W_down . hb (residual; ss[2l+2]) ------------------------------------------------------
    {
      AUTOSCHED_MARK(ph + 4, 0);
      const epi::Args ea{x, nullptr, ss + 2 * l + 2, dim, eps};
      matmul_rows<THREADS, CHUNK, UNROLL>(w[3], hb, hidden, span_lo(dim, b, G), span_lo(dim, b + 1, G), fin,
                                          [&](const float* f, int rows, int row0) {
                                            epi::finish<epi::RESIDUAL, THREADS>(f, rows, row0, dim, x16, ea, 1.f);
                                          });
      AUTOSCHED_MARK_END(ph + 4);
      grid_sync(bar);
      AUTOSCHED_MARK(ph + 4, 2);
    }
  }

  // -- logits = W_cls . x16 * norm; argmax (first of ties), pos += 1 ------------------------------
  AUTOSCHED_MARK(5 * n_layers + 1, 0);
  const float s = epi::norm_scale(epi::Args{nullptr, ss + 2 * n_layers, nullptr, dim, eps});
  float v = neg_inf();
  int vi = 0x7fffffff;
  matmul_rows<THREADS, CHUNK, UNROLL>(w_cls, x16, dim, span_lo(vocab, b, G), span_lo(vocab, b + 1, G), fin,
                                      [&](const float* f, int rows, int row0) {
                                        for (int i = threadIdx.x; i < rows; i += THREADS) {
                                          const __half h = __float2half_rn(f[i] * s);
                                          const float hf = __half2float(h);
                                          logits[row0 + i] = h;
                                          logits_f[row0 + i] = hf;
                                          better_of(v, vi, hf, row0 + i);
                                        }
                                      });
  block_argmax<THREADS>(v, vi, bv, bi);
  if (threadIdx.x == 0) {
    best_v[b] = v;
    best_i[b] = vi;
    __threadfence();
    ticket = atomicAdd(best_count, 1u);
  }
  __syncthreads();
  AUTOSCHED_MARK(5 * n_layers + 1, 1);     // after the __syncthreads above: the block's end
  if (ticket != G - 1) return;
  AUTOSCHED_MARK(5 * n_layers + 2, 0);
  __threadfence();
  v = neg_inf();
  vi = 0x7fffffff;
  for (int k = threadIdx.x; k < G; k += THREADS) better_of(v, vi, __ldcg(best_v + k), __ldcg(best_i + k));
  block_argmax<THREADS>(v, vi, bv, bi);
  if (threadIdx.x == 0) {
    token[0] = vi < vocab ? vi : 0;     // all-NaN logits: the host sees them in logits_f
    pos[0] += 1;
    best_count[0] = 0;                         // ready for the next step
  }
  AUTOSCHED_MARK(5 * n_layers + 2, 1);     // thread 0 wrote the token: the step's last store
}

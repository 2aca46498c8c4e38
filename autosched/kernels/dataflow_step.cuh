// The whole decode step as one persistent kernel of dataflow items: no grid-wide barrier, and the
// weights stream into shared memory without a pause at the boundaries between matmuls.
//
// Work.  Every matmul of the step (per layer qkv, o, gate_up, down; then the classifier) is cut
// into chunks of whole rows, R rows a chunk so that a chunk's weights fill at most one STAGE_BYTES
// slot (R even for gate_up, whose rows pair gate and up).  The chunks of all matmuls are numbered
// in step order, g = 0, 1, ...; block b owns g = b, b + G, b + 2G, ... (G = gridDim.x), so the
// leftovers of one matmul rotate over the blocks instead of landing on the same ones.  Attention of
// layer l is items (head, slice); block b owns items b, b + G, ...
//
// Weights ahead of data.  Weights do not depend on the step's activations, so a block streams its
// next chunks into a ring of STAGES slots (one bulk copy a chunk, on the slot's mbarrier) STAGES
// chunks ahead of the one being computed, across matmul and layer boundaries: while a block waits
// for a matmul's input, the next matmul's weights are already arriving.  (Prefetching further
// chunks into the L2 as well lost 10-35%: bench/results/dataflow-ring-NVIDIA_H200-2026-11-28.json.)
// A slot is refilled as soon as the block has read it.
//
// Dependencies are counters, never a barrier: done[p] counts the finished chunks (items) of phase p
// (0 embed; 1 + 5 l + (0 qkv, 1 attention, 2 o, 3 gate_up, 4 down)); a block adds its count once it
// has finished its share of p (release), and a block with work in the phase after p waits (thread 0,
// acquire) until done[p] reaches p's total, only then reading p's outputs (through L2: ld.cg).
// Every input of a Llama decode matmul is a whole vector (a norm, or all heads), so a phase waits
// for all of its predecessor; attention waits for the qkv matmul and loads its first K/V rows first.
// The last block to finish the classifier (a ticket) picks the token, advances pos and zeroes the
// counters for the next launch.  Blocks wait on one another, so the grid must be co-resident: the
// host launches it cooperatively (the driver refuses a grid that does not fit).
//
//   W     FP16: a chunk is R rows of K halves.  Q4: R rows of K/8 words (eight 4-bit values a
//         word, value NIBBLE_ORDER_K[p] of layouts.py at bits 4p) then R rows of K/32 fp16 scales
//         (q4f16_1, weight = (q-7) s).
//   wt    per matrix m = 4 l + (0 qkv, 1 o, 2 gate_up, 3 down), m = 4 L the classifier: wt[2m]
//         its rows (halves or words), wt[2m + 1] its scales (Q4; null for FP16).
//   Thread t computes, for every row of a chunk, the 8 columns of 16-byte unit c = t + j THREADS
//   (j < XV) against its registers' copy of those 8 activations, loaded once a matmul.
//
// Timeline (-DAUTOSCHED_TIMELINE only; engine/timeline.py reads it): for every block and phase
// thread 0 writes %globaltimer (ns) at 4 slots of tl[((p * G) + b) * 4]: 0 the wait began, 1 the
// wait ended (work began), 2 the work ended, 3 ns spent waiting on the ring (weights not yet in).
// Phases p: the counters' numbering, then 5 L + 1 the classifier.
#pragma once
#include <cuda_fp16.h>
#include "decode.cuh"     // and epilogue.cuh

namespace autosched_flow {
using namespace autosched_decode;
using u32 = unsigned int;
using u64 = unsigned long long;

enum : int { FP16 = 0, Q4 = 1 };
enum : int { QKV = 0, O = 1, GATE_UP = 2, DOWN = 3 };

__device__ __forceinline__ u32 ld_acquire(const u32* p) {
  u32 v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void add_release(u32* p, u32 v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

__device__ __forceinline__ u64 evict_first() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

// The ring's copies are bulk copies (the async proxy), one instruction a chunk issued by thread 0
// and landing on the slot's mbarrier: a fence or release of the phase counters (generic proxy) does
// not wait for them.  Per-thread cp.async copies made every release wait until the ring's next
// chunks had landed, a few microseconds a phase (H200, 2026-11-28: 1100 -> 1243 tok/s for the 1B
// fp16 step, bench/results/dataflow-ring-NVIDIA_H200-2026-11-28.json).
__device__ __forceinline__ void mbar_init(u64* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(bar)) : "memory");
}
// one bulk copy (async proxy) of `bytes` into shared memory, completing on `bar`
__device__ __forceinline__ void bulk_load(void* dst, const void* src, u32 bytes, u64* bar, u64 policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
      ::"r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)), "l"(policy) : "memory");
}
__device__ __forceinline__ void mbar_expect(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
  u32 ok;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok) : "r"(smem_u32(bar)), "r"(parity) : "memory");
  } while (!ok);
}

#if defined(AUTOSCHED_TIMELINE)
__device__ __forceinline__ u64 now_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : : "memory");
  return t;
}
#endif

// The step's shapes, and where chunk g of the step lives.
struct Shape {
  int dim, hidden, q_dim, kv_dim, vocab, n_layers;
};

struct Mat {
  int kind;     // QKV, O, GATE_UP, DOWN, or 4: the classifier
  int layer;
  int n, k;     // rows, columns
  int rows;     // rows a chunk (R)
  int chunks;   // ceil(n / R)
};

__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }

// rows a chunk of each kind takes (the host computes them: templates/dataflow.py chunk_rows)
template <int QKV_R, int O_R, int GU_R, int DOWN_R, int CLS_R>
struct Rows {
  static constexpr int MAX = cmax(cmax(cmax(QKV_R, O_R), cmax(GU_R, DOWN_R)), CLS_R);
  __device__ __forceinline__ static int of(int kind) {
    return kind == 0 ? QKV_R : kind == 1 ? O_R : kind == 2 ? GU_R : kind == 3 ? DOWN_R : CLS_R;
  }
  // ceil(n / rows of kind), each a division by a constant (no integer division a chunk)
  __device__ __forceinline__ static int chunks(int kind, int n) {
    return kind == 0 ? (n + QKV_R - 1) / QKV_R : kind == 1 ? (n + O_R - 1) / O_R
         : kind == 2 ? (n + GU_R - 1) / GU_R : kind == 3 ? (n + DOWN_R - 1) / DOWN_R : (n + CLS_R - 1) / CLS_R;
  }
};

template <typename RS>
__device__ __forceinline__ Mat mat_of(const Shape& s, int m) {
  Mat a;
  a.layer = m / 4;
  a.kind = m == 4 * s.n_layers ? 4 : m % 4;
  switch (a.kind) {
    case QKV: a.n = s.q_dim + 2 * s.kv_dim; a.k = s.dim; break;
    case O: a.n = s.dim; a.k = s.q_dim; break;
    case GATE_UP: a.n = 2 * s.hidden; a.k = s.dim; break;
    case DOWN: a.n = s.dim; a.k = s.hidden; break;
    default: a.n = s.vocab; a.k = s.dim; break;
  }
  a.rows = RS::of(a.kind);
  a.chunks = RS::chunks(a.kind, a.n);
  return a;
}

// A walk over this block's chunks g = b, b + G, ... in step order: m is the matrix of g, base the
// number of chunks before m.
struct Cursor {
  int g, m, base;
};

template <typename RS>
__device__ __forceinline__ void settle(const Shape& s, Cursor& c, Mat& a) {
  const int nm = 4 * s.n_layers + 1;
  while (c.m < nm && c.g >= c.base + a.chunks) {
    c.base += a.chunks;
    ++c.m;
    if (c.m < nm) a = mat_of<RS>(s, c.m);
  }
}

// The ring: thread 0 issues the block's chunk loads in step order, chunk i into slot i % STAGES,
// completing on that slot's mbarrier (phase i / STAGES).
template <int W, int STAGES, int STAGE_BYTES, typename RS>
struct Ring {
  char* slots;
  u64* bars;     // a barrier a slot
  Cursor c;      // the next chunk to load
  Mat a;         // its matrix
  u32 seq;       // loads issued so far
  u64 policy;

  // the rows and scales of chunk (cur, m) and their bytes
  __device__ __forceinline__ static void where(const Cursor& cur, const Mat& m, const void* const* wt,
                                               const char*& rows_at, u32& rows_bytes, const char*& sc_at,
                                               u32& sc_bytes) {
    const int row0 = (cur.g - cur.base) * m.rows, rows = min(m.rows, m.n - row0);
    if constexpr (W == FP16) {
      rows_at = reinterpret_cast<const char*>(static_cast<const __half*>(wt[2 * cur.m]) + (long long)row0 * m.k);
      rows_bytes = (u32)rows * m.k * 2;
      sc_at = nullptr;
      sc_bytes = 0;
    } else {
      rows_at = reinterpret_cast<const char*>(static_cast<const u32*>(wt[2 * cur.m]) + (long long)row0 * (m.k / 8));
      rows_bytes = (u32)rows * (m.k / 2);
      sc_at = reinterpret_cast<const char*>(static_cast<const __half*>(wt[2 * cur.m + 1]) + (long long)row0 * (m.k / 32));
      sc_bytes = (u32)rows * (m.k / 16);
    }
  }

  __device__ __forceinline__ void issue_next(const Shape& s, const void* const* wt, int G) {
    settle<RS>(s, c, a);
    if (c.m < 4 * s.n_layers + 1) {
      const u32 slot = seq % STAGES;
      if (threadIdx.x == 0) {
        const char *rows_at, *sc_at;
        u32 rb, sb;
        where(c, a, wt, rows_at, rb, sc_at, sb);
        char* dst = slots + (long long)slot * STAGE_BYTES;
        mbar_expect(bars + slot, rb + sb);
        bulk_load(dst, rows_at, rb, bars + slot, policy);
        if constexpr (W == Q4) bulk_load(dst + a.rows * (a.k / 2), sc_at, sb, bars + slot, policy);
      }
      ++seq;
      c.g += G;
    }
  }
};

// Two nibbles -> half2 (1024 + q_lo, 1024 + q_hi): OR-ing a nibble into the mantissa of 1024.0h
__device__ __forceinline__ __half2 nibbles(u32 w) {
  u32 out;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(out) : "r"(w), "r"(0x000F000Fu), "r"(0x64006400u));
  return *reinterpret_cast<__half2*>(&out);
}

// the nibbles one up (bits 4-7 and 20-23) -> half2 (1024 + 16 q_lo, 1024 + 16 q_hi), still exact
__device__ __forceinline__ __half2 nibbles_hi(u32 w) {
  u32 out;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(out) : "r"(w), "r"(0x00F000F0u), "r"(0x64006400u));
  return *reinterpret_cast<__half2*>(&out);
}

// this thread's activations of one matmul: unit j holds columns 8 c .. 8 c + 7, c = t + j THREADS,
// as the half2 pairs (x0, x1), (x2, x3), ... that both formats read
template <int THREADS, int XV>
__device__ __forceinline__ void load_acts(const __half* x, int k, uint4 (&xf)[XV]) {
#pragma unroll
  for (int j = 0; j < XV; ++j) {
    const int c = threadIdx.x + j * THREADS;
    xf[j] = c < k / 8 ? __ldcg(reinterpret_cast<const uint4*>(x) + c) : make_uint4(0u, 0u, 0u, 0u);
  }
}

constexpr int RED_STRIDE = 32;      // rows a warp's partials hold (a chunk takes at most 32)

__host__ __device__ constexpr int pow2_at_least(int n) { return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2); }

// out[r] = the sum over the warp's lanes of v[r], r < N (a power of two <= 32), in N - 1 + log2(32 / N)
// shuffles instead of 5 N: each round, half the lanes keep the upper half of the values and the other
// half the lower, each adding its partner's copy of the half it keeps; a lane ends with one row.
// one round: N values a lane -> N / 2, partners O lanes apart
template <int N, int O>
__device__ __forceinline__ void halve_rows(float* v, int lane, int& row) {
  if constexpr (N > 1) {
    const bool up = lane & O;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const float send = up ? v[i] : v[i + N / 2];
      const float keep = up ? v[i + N / 2] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
    }
    if (up) row += N / 2;
    halve_rows<N / 2, O / 2>(v, lane, row);
  }
}

template <int R>
__device__ __forceinline__ void warp_rows_sum(float (&v)[pow2_at_least(R)], int lane, float* out) {
  constexpr int N = pow2_at_least(R);
  static_assert(N <= 32, "at most 32 rows a chunk");
  int row = 0;
  halve_rows<N, 16>(v, lane, row);
  float t = v[0];
#pragma unroll
  for (int o = 16 / N; o > 0; o /= 2) t += __shfl_xor_sync(0xffffffffu, t, o);
  if ((lane & (32 / N - 1)) == 0) out[row] = t;
}

// red[warp * RED_STRIDE + r] = the warp's part of row r . x, r < R, for the chunk in `slot`.  R is the
// matrix's rows a chunk, a constant: rows past a last, short chunk read what the slot held before
// (inside the slot: R rows fit it) and are never used.
template <int W, int THREADS, int XV, int R>
__device__ __forceinline__ void chunk_partials(const char* slot, int k, const uint4 (&xf)[XV], float* red) {
  const int units = k / 8, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float acc[pow2_at_least(R)];
#pragma unroll
  for (int r = R; r < pow2_at_least(R); ++r) acc[r] = 0.f;
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f;
#pragma unroll
  for (int j = 0; j < XV; ++j) {
    const int c = threadIdx.x + j * THREADS;
    if (c < units) {
      if constexpr (W == FP16) {
        const __half2* xh = reinterpret_cast<const __half2*>(&xf[j]);
        float2 xv[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) xv[i] = __half22float2(xh[i]);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const uint4 w = *reinterpret_cast<const uint4*>(slot + ((long long)r * k + 8 * c) * 2);
          const __half2* wh = reinterpret_cast<const __half2*>(&w);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float2 a = __half22float2(wh[i]);
            acc[r] = fmaf(a.x, xv[i].x, fmaf(a.y, xv[i].y, acc[r]));
          }
        }
      } else {
        // a word's nibbles in NIBBLE_ORDER_K: pair p = (x_2p, x_2p+1) sits at nibbles p and p + 4.
        // Pairs 0 and 2 come out of one LOP3 as 1024 + q, pairs 1 and 3 (unshifted, one nibble up)
        // as 1024 + 16 q, which one HFMA2 takes to q - 7 exactly: one shift a word instead of three
        const __half2* xp = reinterpret_cast<const __half2*>(&xf[j]);
        const __half2 bias = __half2half2(__ushort_as_half(0x6407));     // 1024 + 7
        const __half2 sixteenth = __half2half2(__ushort_as_half(0x2C00));  // 1 / 16
        const __half2 bias16 = __half2half2(__ushort_as_half(0xD470));     // -(64 + 7)
        const u32* words = reinterpret_cast<const u32*>(slot);
        const __half* scales = reinterpret_cast<const __half*>(slot + R * (k / 2));
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const u32 w = words[r * units + c], w8 = w >> 8;
          const __half sc = scales[r * (k / 32) + c / 4];
          __half2 h = __hmul2(__hsub2(nibbles(w), bias), xp[0]);
          h = __hfma2(__hfma2(nibbles_hi(w), sixteenth, bias16), xp[1], h);
          h = __hfma2(__hsub2(nibbles(w8), bias), xp[2], h);
          h = __hfma2(__hfma2(nibbles_hi(w8), sixteenth, bias16), xp[3], h);
          acc[r] = fmaf(__half2float(sc), __half2float(__hadd(__low2half(h), __high2half(h))), acc[r]);
        }
      }
    }
  }
  warp_rows_sum<R>(acc, lane, red + warp * RED_STRIDE);
}

}  // namespace autosched_flow

#if defined(AUTOSCHED_TIMELINE)
#define AUTOSCHED_TL_ARG , unsigned long long* __restrict__ tl
#define AUTOSCHED_TL(p, k, v)                                                            \
  do {                                                                                   \
    if (threadIdx.x == 0) tl[((long long)(p) * gridDim.x + blockIdx.x) * 4 + (k)] = (v); \
  } while (0)
#define AUTOSCHED_NOW() autosched_flow::now_ns()
#else
#define AUTOSCHED_TL_ARG
#define AUTOSCHED_TL(p, k, v) ((void)0)
#define AUTOSCHED_NOW() 0ull
#endif

// Dynamic shared memory: STAGES * STAGE_BYTES (the ring), then 2 x THREADS / 32 x 32 floats of warp partials (the host sizes
// it: templates/dataflow.py smem_bytes).
// part: (n_heads, nsplit, head_size + 2) floats; count: n_heads tickets; best_v, best_i: gridDim.x
// each; best_count: 1 ticket; done: 5 L + 1 counters, 0 between steps.
template <int W, int THREADS, int PER_SM, int STAGES, int STAGE_BYTES, int QKV_R, int O_R, int GU_R, int DOWN_R, int CLS_R,
          int XV, int KPRE, int PAIRS>
__global__ void __launch_bounds__(THREADS, PER_SM)
dataflow_step(float* x, __half* x16, double* ss, __half* qkv, __half* att, __half* hb, __half* logits,
              float* logits_f, float* part, unsigned* count, float* best_v, int* best_i, unsigned* best_count,
              unsigned* done, int* token, int* pos, const float* __restrict__ table,
              const float2* __restrict__ rope_cs, const void* const* __restrict__ wt, __half* k_cache,
              __half* v_cache, int dim, int hidden, int n_layers, int n_heads, int kv_dim, int head_size,
              int seq_len, int vocab, int nsplit, float eps AUTOSCHED_TL_ARG) {
  using namespace autosched_flow;
  namespace epi = autosched_epi;
  static_assert(THREADS % 64 == 0 && THREADS <= 256, "whole warp pairs; attention_item takes <= 256");
  static_assert(STAGE_BYTES % 16 == 0 && STAGES >= 3, "16-byte slots, a chunk in flight beside two in use");
  using RS = Rows<QKV_R, O_R, GU_R, DOWN_R, CLS_R>;
  constexpr int MAXR = RS::MAX;
  static_assert(MAXR <= RED_STRIDE && GU_R % 2 == 0, "at most 32 rows a chunk; gate/up in pairs");
  constexpr int NW = THREADS / 32;
  extern __shared__ __align__(128) char smem[];
  __shared__ float red_att[THREADS * 8];
  __shared__ unsigned ticket;
  __shared__ float bv[NW];
  __shared__ int bi[NW];
  // two buffers of warp partials: a chunk's are summed while the next chunk's are made
  float* red = reinterpret_cast<float*>(smem + STAGES * STAGE_BYTES);
  const int G = gridDim.x, b = blockIdx.x, tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const Shape s{dim, hidden, n_heads * head_size, kv_dim, vocab, n_layers};
  const int n_ss = 2 * n_layers + 1, kv_mul = n_heads / (kv_dim / head_size);

  // the ring, and its first STAGES loads, before anything waits
  __shared__ __align__(8) u64 bars[STAGES];
  if (tid == 0) {
    for (int i = 0; i < STAGES; ++i) mbar_init(bars + i);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  // the ring's first STAGES loads, before anything waits
  Ring<W, STAGES, STAGE_BYTES, RS> ring{smem, bars, Cursor{b, 0, 0}, mat_of<RS>(s, 0), 0u, evict_first()};
  for (int i = 0; i < STAGES; ++i) ring.issue_next(s, wt, G);

  // -- embed (block 0): x = table[token], x16, ss[0] = sum x^2, ss[1 ..] = 0 -------------------------
  if (b == 0) {
    AUTOSCHED_TL(0, 0, AUTOSCHED_NOW());
    AUTOSCHED_TL(0, 1, AUTOSCHED_NOW());
    const float* row = table + (long long)token[0] * dim;
    float sq = 0.f;
    for (int i = tid; i < dim; i += THREADS) {
      const float v = row[i];
      x[i] = v;
      x16[i] = __float2half_rn(v);
      sq += v * v;
    }
    sq = block_sum<THREADS>(sq, red_att);
    if (tid == 0) ss[0] = sq;
    for (int i = 1 + tid; i < n_ss; i += THREADS) ss[i] = 0.0;
    __syncthreads();
    if (tid == 0) {
      add_release(done, 1u);
    }
    AUTOSCHED_TL(0, 2, AUTOSCHED_NOW());
  }

  // thread 0 waits until done[p] >= target; then the whole block may read what p wrote
  auto wait_for = [&](int p, u32 target) {
    if (tid == 0) {
      while (ld_acquire(done + p) < target) __nanosleep(64);
    }
    __syncthreads();
  };

  // what phase p's counter reaches when it is done: its chunks, or attention's items
  auto phase_total = [&](int p) -> u32 {
    if (p == 0) return 1u;
    const int k = (p - 1) % 5;
    return k == 1 ? (u32)(n_heads * nsplit) : (u32)mat_of<RS>(s, 4 * ((p - 1) / 5) + (k == 0 ? 0 : k - 1)).chunks;
  };

  Cursor cc{b, 0, 0};                       // the next chunk to compute
  Mat a = mat_of<RS>(s, 0);
  u32 seq = 0;                              // chunks computed so far
  float best = neg_inf();
  int best_at = 0x7fffffff;
  uint4 xf[XV];
  const int nm = 4 * n_layers + 1;
  for (int m = 0; m < nm; ++m) {
    const int l = m / 4, kind = m == 4 * n_layers ? 4 : m % 4;
    const int ph = kind == 4 ? 5 * n_layers + 1 : 1 + 5 * l + (kind == QKV ? 0 : kind + 1);   // its phase
    if (kind == O) {
      // -- attention of layer l: items (head, slice) after the qkv matmul --------------------------
      const int items = n_heads * nsplit;
      if (b < items) {
        const int pa = ph - 1;
        AUTOSCHED_TL(pa, 0, AUTOSCHED_NOW());
        u32 mine = 0;
        __half* kc = k_cache + (long long)l * seq_len * kv_dim;
        __half* vc = v_cache + (long long)l * seq_len * kv_dim;
        // the first item to get past its early return waits (one past the context's slices never reads qkv)
        bool waited = false;
        const u32 target = phase_total(pa - 1);
        auto wait = [&]() {
          if (!waited) {
            wait_for(pa - 1, target);
            AUTOSCHED_TL(pa, 1, AUTOSCHED_NOW());
            waited = true;
          }
        };
        for (int it = b; it < items; it += G) {
          attention_item<__half, THREADS, decltype(wait), KPRE, PAIRS>(
              att, part, count, qkv, kc, vc, pos, rope_cs, n_heads, kv_dim, head_size, kv_mul, it % n_heads,
              it / n_heads, nsplit, red, red_att, ticket, wait);
          __syncthreads();     // the next item rewrites the shared buffers
          ++mine;
        }
        __syncthreads();
        if (tid == 0) {
          add_release(done + pa, mine);
        }
        AUTOSCHED_TL(pa, 2, AUTOSCHED_NOW());
      }
    }
    settle<RS>(s, cc, a);  // a: the matrix of cc's chunk
    if (cc.m != m) continue;                 // no chunk of this matmul is ours
    // -- the matmul's input: its predecessor done, then this thread's activations ----------------
    const int pred = kind == QKV ? (l == 0 ? 0 : ph - 1) : kind == 4 ? 5 * n_layers : ph - 1;
    // the residual rows this thread adds to (O, DOWN), of the chunk being computed and the one
    // before: the first chunk's are read before the wait for the matmul's input, once the phase
    // that wrote them (long finished) is seen done, so that their round trip is off the chain
    const bool resid = kind == O || kind == DOWN;
    auto x_of = [&](const Cursor& c) {
      const int r0 = (c.g - c.base) * a.rows;
      return resid && tid < min(a.rows, a.n - r0) ? __ldcg(x + r0 + tid) : 0.f;
    };
    float x_cur = 0.f, x_prev = 0.f;
    if (resid) {
      const int wrote = kind == DOWN ? ph - 2 : l == 0 ? 0 : ph - 3;     // o of layer l; down of l - 1
      wait_for(wrote, phase_total(wrote));
      x_cur = x_of(cc);
    }
    AUTOSCHED_TL(ph, 0, AUTOSCHED_NOW());
    wait_for(pred, phase_total(pred));
    AUTOSCHED_TL(ph, 1, AUTOSCHED_NOW());
    const __half* xin = kind == O ? att : kind == DOWN ? hb : x16;
    load_acts<THREADS, XV>(xin, a.k, xf);
    const int ssi = kind == QKV ? 2 * l : kind == GATE_UP ? 2 * l + 1 : 2 * n_layers;
    const float sc = (kind == QKV || kind == GATE_UP || kind == 4)
                         ? epi::norm_scale(epi::Args{nullptr, ss + ssi, nullptr, dim, eps}) : 1.f;
    u32 mine = 0;
    u64 ring_ns = 0;
    // the chunk before this one, whose partials wait in red[pbuf] for their epilogue: summed and
    // finished after the next chunk's barrier, by the threads that own its rows (one barrier a chunk)
    int prow0 = -1, prows = 0, pbuf = 0;
    auto finish_prev = [&]() {
      const float* rb = red + pbuf * NW * RED_STRIDE;
      auto row_sum = [&](int r) {
        float f = 0.f;
#pragma unroll
        for (int w = 0; w < NW; ++w) f += rb[w * RED_STRIDE + r];
        return f;
      };
      if (kind == GATE_UP) {
        if (2 * tid < prows) {
          const float g = row_sum(2 * tid) * sc, u = row_sum(2 * tid + 1) * sc;
          hb[prow0 / 2 + tid] = __float2half_rn(g / (1.f + __expf(-g)) * u);
        }
      } else if (kind == O || kind == DOWN) {
        float sq = 0.f;
        if (tid < prows) {
          const int r = prow0 + tid;
          const float v = x_prev + row_sum(tid);
          x[r] = v;
          x16[r] = __float2half_rn(v);
          sq = v * v;
        }
        if ((tid & ~31) < prows) {            // the warps that own rows (a warp-uniform test)
          sq = warp_sum(sq);
          if (lane == 0) atomicAdd(ss + (kind == O ? 2 * l + 1 : 2 * l + 2), (double)sq);
        }
      } else if (tid < prows) {
        const float f = row_sum(tid) * sc;
        if (kind == QKV) {
          qkv[prow0 + tid] = __float2half_rn(f);
        } else {
          const __half h = __float2half_rn(f);
          const float hf = __half2float(h);
          logits[prow0 + tid] = h;
          logits_f[prow0 + tid] = hf;
          better_of(best, best_at, hf, prow0 + tid);
        }
      }
    };
    while (cc.m == m) {
      const int row0 = (cc.g - cc.base) * a.rows, rows = min(a.rows, a.n - row0);
      const char* sp = smem + (long long)(seq % STAGES) * STAGE_BYTES;
#if defined(AUTOSCHED_TIMELINE)
      const u64 t0 = now_ns();
#endif
      // this chunk's slot landed; the slot of the chunk before is refilled only after the barrier
      mbar_wait(bars + seq % STAGES, (seq / STAGES) & 1);
      __syncthreads();      // this chunk landed; the one before is read (its slot free) and reduced
#if defined(AUTOSCHED_TIMELINE)
      ring_ns += now_ns() - t0;
#endif
      if (prow0 >= 0) {
        x_cur = x_of(cc);      // used after the next chunk's barrier
        ring.issue_next(s, wt, G);
        finish_prev();
      }
      float* rb = red + (seq & 1) * NW * RED_STRIDE;
      switch (kind) {
        case QKV: chunk_partials<W, THREADS, XV, QKV_R>(sp, a.k, xf, rb); break;
        case O: chunk_partials<W, THREADS, XV, O_R>(sp, a.k, xf, rb); break;
        case GATE_UP: chunk_partials<W, THREADS, XV, GU_R>(sp, a.k, xf, rb); break;
        case DOWN: chunk_partials<W, THREADS, XV, DOWN_R>(sp, a.k, xf, rb); break;
        default: chunk_partials<W, THREADS, XV, CLS_R>(sp, a.k, xf, rb); break;
      }
      prow0 = row0;
      prows = rows;
      x_prev = x_cur;
      pbuf = seq & 1;
      ++seq;
      ++mine;
      cc.g += G;
      settle<RS>(s, cc, a);
    }
    __syncthreads();        // the last chunk is read and reduced
    ring.issue_next(s, wt, G);
    finish_prev();
    (void)ring_ns;
    AUTOSCHED_TL(ph, 3, ring_ns);
    if (kind != 4) {
      __syncthreads();                        // the block's outputs, before thread 0's release
      if (tid == 0) {
        add_release(done + ph, mine);
      }
    }
    AUTOSCHED_TL(ph, 2, AUTOSCHED_NOW());
  }

  // -- argmax over the blocks' winners (first of ties); the last block picks the token ------------
  block_argmax<THREADS>(best, best_at, bv, bi);
  if (tid == 0) {
    best_v[b] = best;
    best_i[b] = best_at;
    __threadfence();
    ticket = atomicAdd(best_count, 1u);
  }
  __syncthreads();
  if (ticket != (unsigned)G - 1) return;
  __threadfence();
  best = neg_inf();
  best_at = 0x7fffffff;
  for (int k = tid; k < G; k += THREADS) better_of(best, best_at, __ldcg(best_v + k), __ldcg(best_i + k));
  block_argmax<THREADS>(best, best_at, bv, bi);
  if (tid == 0) {
    token[0] = best_at < vocab ? best_at : 0;     // all-NaN logits: the host sees them in logits_f
    pos[0] += 1;
    best_count[0] = 0;
  }
  // every block has passed every wait (each took its ticket after them): ready for the next step
  for (int i = tid; i < 5 * n_layers + 1; i += THREADS) done[i] = 0u;
}

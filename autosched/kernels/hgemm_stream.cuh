// FP16 / BF16 GEMM for few rows of A (prefill chunks, batched decode), FP32 accumulation, output in
// the input type: C (M, N) row-major = A (M, K) row-major . W^T, W stored (N, K) as a linear
// layer's weight is (the hgemm workload's nt layout).
//
// Why a kernel of its own: at M <= 256 the GEMM is bound by reading W once from DRAM, and the
// tiled templates, built to reuse tiles, keep too little of W in flight (128 x 4096 x 4096: the
// wgmma kernel reaches 46% of DRAM throughput, cuBLAS 62%).  Here W is streamed: each CTA owns BN
// rows of W and a K slice, and moves them through a STAGES-deep cp.async ring with the L2 told to
// fetch 256 bytes at a time; the few rows of A ride along in the same ring.  The MMA is swapped:
// W is mma.sync's 16-row A operand (its rows are C's columns) and A's rows are its 8-column B
// operand, so 8 rows of A fill an MMA (a tile of 64 would waste most of one at M = 16).
//
// Fragments without ldmatrix, by permuting k.  A thread (g = lane / 4, q = lane % 4) reads 16
// bytes = 8 consecutive k of a W row from shared memory, and 16 bytes of an A row at the same k.
// The sum over k does not care which k an MMA calls which, so of the 32 k at offsets 8q .. 8q + 7
// (q = 0..3), k-step 0 takes 8q + 0..3 and k-step 1 takes 8q + 4..7: in step s, the mma's logical
// k pair (2q, 2q + 1) is physical 8q + 4s + (0, 1) and the pair (2q + 8, 2q + 9) is 8q + 4s + (2, 3),
// for W (the a registers) and A (the b registers) alike.  One LDS.128 per row and 32 k.
//
// CTA: WN x WK warps.  Warp (wn, wk) owns W rows [16 RW wn, 16 RW (wn + 1)) of the CTA's BN = 16 RW WN
// and k [KW wk, KW (wk + 1)) of each chunk of CH = KW WK; it holds RW x MT / 8 accumulator tiles of
// 16 x 8 (W rows x A rows).  After the K loop the WK partials are summed in shared memory.
//
// Split-K (SPLIT_K > 1, grid.y): slice s of the K chunks writes its FP32 tile to a workspace, and
// the slice whose arrival at the tile's counter comes last adds the others' and stores C, as
// hgemm_wgmma_splitk.cuh does: no CTA waits for another.  Workspace: a u32 counter per (n tile,
// m tile) padded to 256 bytes, then SPLIT_K x tiles FP32 tiles of MT x BN; zeroed once by the
// launcher, left zeroed (the last CTA resets its counter).
//
// Edges: K is a multiple of 8 (the workload's rule for B stored (N, K)), so every 16-byte chunk is
// whole; chunks past N, M or K are zero-filled by cp.async (src-size 0 reads nothing), stores past
// M and N are skipped.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace autosched_stream {

template <int BF16> struct Elem { using T = half; };
template <> struct Elem<1> { using T = __nv_bfloat16; };

template <int BF16, int RW, int WN, int WK, int MT, int KW, int STAGES, int SPLIT_K>
struct HgemmStream {
  using T = typename Elem<BF16>::T;
  static constexpr int THREADS = 32 * WN * WK;
  static constexpr int BN = 16 * RW * WN;          // W rows (C columns) a CTA owns
  static constexpr int CH = KW * WK;               // k of one ring slot
  static constexpr int U = KW / 32;                // 32-k groups a warp takes from a slot
  static constexpr int NJ = MT / 8;                // 8-row tiles of A
  // a shared row is CH halves plus a pad that makes its stride 64 bytes past a multiple of 128:
  // the 8 lanes of one LDS.128 phase read two rows' 64 contiguous bytes, which then fill all 32 banks
  static constexpr int PAD = ((CH * 2) % 128 == 0) ? 32 : ((CH * 2) % 128 == 64 ? 0 : -1);
  static constexpr int LD = CH + PAD;              // halves
  static constexpr int STAGE = (BN + MT) * LD;     // halves: W rows, then A rows
  static constexpr int RING_BYTES = STAGES * STAGE * 2;
  static constexpr int RED_LD = BN + 4;            // floats; the partial tiles are [WK][MT][RED_LD]
  static constexpr int RED_BYTES = WK * MT * RED_LD * 4;
  static constexpr int SMEM_BYTES = RING_BYTES > RED_BYTES ? RING_BYTES : RED_BYTES;

  static_assert(RW == 1 || RW == 2, "one or two 16-row W blocks a warp");
  static_assert(THREADS >= 64 && THREADS <= 512, "2 to 16 warps");
  static_assert(MT % 8 == 0 && MT >= 8 && MT <= 128, "A rows in whole 8-row MMA tiles, at most 128");
  static_assert(KW % 32 == 0 && KW >= 32 && KW <= 128, "a warp takes 32, 64 or 128 k of a slot");
  static_assert(PAD >= 0, "slot rows of a whole number of 64-byte units");
  static_assert(RW * NJ * 4 <= 128, "accumulators: RW x MT / 2 <= 128 floats a thread");
  static_assert(STAGES >= 2 && STAGES <= 8, "a cp.async ring of 2 to 8 slots");
  static_assert(SPLIT_K >= 1 && SPLIT_K <= 16, "1 to 16 K slices");
  static_assert(SMEM_BYTES <= 232448, "shared memory: the H100's opt-in limit per block");

  static __device__ __forceinline__ void copy16(unsigned dst, const T* src, bool valid) {
    // the L2 fetches 256 bytes a miss: the next chunks of the same W rows arrive with this one
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0) : "memory");
  }
  static __device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
  template <int N>
  static __device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

  static __device__ __forceinline__ uint4 lds128(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
  }

  static __device__ __forceinline__ void mma(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                             unsigned b0, unsigned b1) {
    if constexpr (BF16)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};\n"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    else
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};\n"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }

  // slot `stage` <- chunk `c`: BN rows of W, then MT rows of A, CH k each, 16 bytes a copy
  static __device__ __forceinline__ void load(unsigned ring, int stage, int c, const T* A, const T* W, int M,
                                              int N, int K, int m0, int n0) {
    constexpr int PER_ROW = CH / 8;
    const unsigned base = ring + stage * STAGE * 2;
    const int k0 = c * CH;
#pragma unroll 4
    for (int p = threadIdx.x; p < (BN + MT) * PER_ROW; p += THREADS) {
      const int r = p / PER_ROW, kk = (p % PER_ROW) * 8, k = k0 + kk;
      const bool is_w = r < BN;
      const int row = is_w ? n0 + r : m0 + r - BN;
      const bool valid = (is_w ? row < N : row < M) && k < K;
      const T* src = valid ? (is_w ? W : A) + (size_t)row * K + k : W;
      copy16(base + (r * LD + kk) * 2, src, valid);
    }
  }

  static __device__ void run(const T* __restrict__ A, const T* __restrict__ W, T* __restrict__ C,
                             unsigned char* ws, int M, int N, int K, unsigned char* smem) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int wn = warp % WN, wk = warp / WN;
    const int n0 = blockIdx.x * BN, slice = blockIdx.y, m0 = blockIdx.z * MT;
    const unsigned ring = static_cast<unsigned>(__cvta_generic_to_shared(smem));

    // this slice's chunks: of ceil(K / CH) = qn * SPLIT_K + rn, slice s takes qn + (s < rn)
    const int chunks = (K + CH - 1) / CH, qn = chunks / SPLIT_K, rn = chunks % SPLIT_K;
    const int c0 = slice * qn + min(slice, rn), nc = qn + (slice < rn);

    float acc[RW][NJ][4];
#pragma unroll
    for (int i = 0; i < RW; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < nc) load(ring, s, c0 + s, A, W, M, N, K, m0, n0);
      commit();
    }
    for (int i = 0; i < nc; ++i) {
      wait<STAGES - 2>();
      __syncthreads();    // slot i % STAGES has landed for everyone, and slot (i - 1) % STAGES is free
      if (i + STAGES - 1 < nc) load(ring, (i + STAGES - 1) % STAGES, c0 + i + STAGES - 1, A, W, M, N, K, m0, n0);
      commit();
      const unsigned slot = ring + (i % STAGES) * STAGE * 2;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int kq = wk * KW + u * 32 + 8 * q;                      // this thread's 8 k
        uint4 lo[RW], hi[RW];
#pragma unroll
        for (int r = 0; r < RW; ++r) {
          const int row = 16 * (RW * wn + r) + g;
          lo[r] = lds128(slot + (row * LD + kq) * 2);
          hi[r] = lds128(slot + ((row + 8) * LD + kq) * 2);
        }
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
          const uint4 b = lds128(slot + ((BN + 8 * j + g) * LD + kq) * 2);
#pragma unroll
          for (int r = 0; r < RW; ++r) {
            mma(acc[r][j], lo[r].x, hi[r].x, lo[r].y, hi[r].y, b.x, b.y);   // k-step 0: 8q + 0..3
            mma(acc[r][j], lo[r].z, hi[r].z, lo[r].w, hi[r].w, b.z, b.w);   // k-step 1: 8q + 4..7
          }
        }
      }
    }
    wait<0>();
    __syncthreads();      // the ring is free: it becomes the partial tiles

    // accumulator (r, j, e) is W row 16 (RW wn + r) + g + 8 (e / 2), A row 8 j + 2 q + e % 2
    float* red = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int r = 0; r < RW; ++r)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int n = 16 * (RW * wn + r) + g + 8 * (e / 2), m = 8 * j + 2 * q + e % 2;
          red[(wk * MT + m) * RED_LD + n] = acc[r][j][e];
        }
    __syncthreads();

    const int tiles = gridDim.x * gridDim.z, tile = blockIdx.z * gridDim.x + blockIdx.x;
    unsigned* counter = reinterpret_cast<unsigned*>(ws) + tile;
    float* partials = reinterpret_cast<float*>(ws + ((size_t)tiles * 4 + 255) / 256 * 256);
    if constexpr (SPLIT_K > 1) {
      float* mine = partials + ((size_t)slice * tiles + tile) * (MT * BN);
      for (int p = threadIdx.x; p < MT * BN; p += THREADS) {
        const int m = p / BN, n = p % BN;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < WK; ++w) v += red[(w * MT + m) * RED_LD + n];
        mine[p] = v;
      }
      __threadfence();    // release: this slice's partial before its arrival
      __syncthreads();
      int last = 0;
      if (threadIdx.x == 0) {
        unsigned prev;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n" : "=r"(prev) : "l"(counter) : "memory");
        last = prev == SPLIT_K - 1;
        if (last) *counter = 0;   // every slice has arrived: the next launch finds it zeroed
      }
      // the verdict reaches every thread through the barrier itself: no static shared memory, so
      // the block's shared memory is exactly the dynamic amount the launcher opts in for
      if (!__syncthreads_or(last)) return;
      __threadfence();    // acquire: the other slices' partials after their arrivals
    }
    for (int p = threadIdx.x; p < MT * BN; p += THREADS) {
      const int m = p / BN, n = p % BN;
      float v = 0.0f;
      if constexpr (SPLIT_K > 1) {
#pragma unroll 1
        for (int s = 0; s < SPLIT_K; ++s) {
          float x;
          asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(x)
                       : "l"(partials + ((size_t)s * tiles + tile) * (MT * BN) + p) : "memory");
          v += x;
        }
      } else {
#pragma unroll
        for (int w = 0; w < WK; ++w) v += red[(w * MT + m) * RED_LD + n];
      }
      if (m0 + m < M && n0 + n < N) {
        if constexpr (BF16) C[(size_t)(m0 + m) * N + n0 + n] = __float2bfloat16_rn(v);
        else C[(size_t)(m0 + m) * N + n0 + n] = __float2half_rn(v);
      }
    }
  }
};

}  // namespace autosched_stream

template <int BF16, int RW, int WN, int WK, int MT, int KW, int STAGES, int SPLIT_K>
__global__ void __launch_bounds__(32 * WN * WK)
hgemm_stream(const typename autosched_stream::Elem<BF16>::T* __restrict__ A,
             const typename autosched_stream::Elem<BF16>::T* __restrict__ W,
             typename autosched_stream::Elem<BF16>::T* __restrict__ C, unsigned char* ws, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  autosched_stream::HgemmStream<BF16, RW, WN, WK, MT, KW, STAGES, SPLIT_K>::run(A, W, C, ws, M, N, K, smem);
}

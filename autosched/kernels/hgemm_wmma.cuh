// Tensor-core GEMM in the tensor-core seed's design: D (M, N) = A (M, K) . B (K, N), FP16 or BF16
// inputs (BF16), FP32 accumulation, the output in the input type.
//
// The warp-level operation is wmma m16n16k16 (the seed's wmma::mma_sync), written in PTX because
// NVRTC compiles no <mma.h> wrappers here: wmma.load of A and B fragments from shared memory,
// wmma.mma, wmma.store of the FP32 accumulators.  A block owns a BM x BN tile of D and walks K in
// BK slices; each warp owns WM x WN of it, (WM/16) x (WN/16) accumulator fragments held in
// registers for the whole K loop.  Slices move global -> shared with 16-byte cp.async, STAGES of
// them in a ring (1: load, wait, multiply; 2 or 3: STAGES-1 slices in flight while one is
// multiplied).
//
// Layouts.  Each operand's shared tile holds its slice as the operand is stored, and the fragment
// layout (.row or .col) reads it as the logical matrix, so no thread ever transposes:
//   A row-major (M, K)         [BM][BK + PAD]               wmma.load.a .row, ldm BK + PAD
//   A stored (K, M)  (A_COL)   [BK][BM + PAD]               wmma.load.a .col, ldm BM + PAD
//   B row-major (K, N)         [BK][BN + PAD]               wmma.load.b .row, ldm BN + PAD
//   B stored (N, K)  (B_COL)   [BN][BK + PAD]               wmma.load.b .col, ldm BK + PAD
//   blocked (BLOCKED: A, B and D as [rows/16][cols/16][16][16], the seed's layout)
//                              A [BM/16][BK/16][256], B [BK/16][BN/16][256]: whole 16 x 16 tiles,
//                              each wmma.load'ed .row with ldm 16; D written tile by tile.
// wmma.load wants a 32-byte aligned fragment origin and an ldm of a multiple of 16 bytes.  Every
// origin is at a multiple of 16 rows and 16 columns of a 128-byte aligned buffer, and 16 rows of
// an ldm that is a multiple of 8 halves span a multiple of 256 bytes, so PAD a multiple of 8
// halves keeps both (the rows between origins need no 32-byte alignment).
//
// Edges: the stored rows of A and B are whole 16-byte chunks (their length is a multiple of 8;
// the workload refuses other shapes), so a chunk is in or out of the matrix as a whole: out ones
// are zero-filled (they add nothing to the sums), and stores outside D are skipped.  The
// accumulators leave through a per-warp 16 x 16 FP32 scratch in shared memory (the fragment's
// register layout is not specified by PTX), converted to FP16/BF16 with round-to-nearest-even.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace autosched_wmma {

template <int BF16> struct Elem { using T = half; };
template <> struct Elem<1> { using T = __nv_bfloat16; };

// A or B fragment of m16n16k16: eight .f16x2 registers for FP16, four .b32 (2 x bf16) for BF16
template <int BF16> struct FragAB { unsigned x[BF16 ? 4 : 8]; };
struct FragC { float x[8]; };     // FP32 accumulators: eight a lane

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// OPB 0 loads an A fragment, 1 a B fragment; COL picks the .col fragment layout
template <int OPB, int COL, int BF16>
__device__ __forceinline__ void load_frag(FragAB<BF16>& f, const void* p, unsigned ldm) {
  const unsigned s = smem_addr(p);
#define AS_WMMA_LOAD(OPR, LAY)                                                                     \
  if constexpr (BF16)                                                                              \
    asm volatile("wmma.load." OPR ".sync.aligned." LAY ".m16n16k16.shared.bf16 "                   \
                 "{%0, %1, %2, %3}, [%4], %5;\n"                                                   \
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]) : "r"(s), "r"(ldm));    \
  else                                                                                             \
    asm volatile("wmma.load." OPR ".sync.aligned." LAY ".m16n16k16.shared.f16 "                    \
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"                                   \
                 : "=r"(f.x[0]), "=r"(f.x[1]), "=r"(f.x[2]), "=r"(f.x[3]),                         \
                   "=r"(f.x[4]), "=r"(f.x[5]), "=r"(f.x[6]), "=r"(f.x[7]) : "r"(s), "r"(ldm));
  if constexpr (OPB == 0 && !COL) { AS_WMMA_LOAD("a", "row") }
  else if constexpr (OPB == 0) { AS_WMMA_LOAD("a", "col") }
  else if constexpr (!COL) { AS_WMMA_LOAD("b", "row") }
  else { AS_WMMA_LOAD("b", "col") }
#undef AS_WMMA_LOAD
}

// d += a . b; the layouts must be those the fragments were loaded with
template <int A_COL, int B_COL, int BF16>
__device__ __forceinline__ void mma(FragC& d, const FragAB<BF16>& a, const FragAB<BF16>& b) {
#define AS_WMMA_MMA(LA, LB)                                                                         \
  if constexpr (BF16)                                                                               \
    asm volatile("wmma.mma.sync.aligned." LA "." LB ".m16n16k16.f32.bf16.bf16.f32 "                 \
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "     \
                 "{%0, %1, %2, %3, %4, %5, %6, %7};\n"                                              \
                 : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3]),                          \
                   "+f"(d.x[4]), "+f"(d.x[5]), "+f"(d.x[6]), "+f"(d.x[7])                           \
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]),                              \
                   "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]));                             \
  else                                                                                              \
    asm volatile("wmma.mma.sync.aligned." LA "." LB ".m16n16k16.f32.f32 "                           \
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, "       \
                 "{%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};\n"    \
                 : "+f"(d.x[0]), "+f"(d.x[1]), "+f"(d.x[2]), "+f"(d.x[3]),                          \
                   "+f"(d.x[4]), "+f"(d.x[5]), "+f"(d.x[6]), "+f"(d.x[7])                           \
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]),                              \
                   "r"(a.x[4]), "r"(a.x[5]), "r"(a.x[6]), "r"(a.x[7]),                              \
                   "r"(b.x[0]), "r"(b.x[1]), "r"(b.x[2]), "r"(b.x[3]),                              \
                   "r"(b.x[4]), "r"(b.x[5]), "r"(b.x[6]), "r"(b.x[7]));
  if constexpr (!A_COL && !B_COL) { AS_WMMA_MMA("row", "row") }
  else if constexpr (!A_COL) { AS_WMMA_MMA("row", "col") }
  else if constexpr (!B_COL) { AS_WMMA_MMA("col", "row") }
  else { AS_WMMA_MMA("col", "col") }
#undef AS_WMMA_MMA
}

// the accumulators as a row-major 16 x 16 FP32 tile (ldm in floats)
__device__ __forceinline__ void store_acc(float* p, const FragC& d, unsigned ldm) {
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.shared.f32 "
               "[%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;\n"
               ::"r"(smem_addr(p)), "f"(d.x[0]), "f"(d.x[1]), "f"(d.x[2]), "f"(d.x[3]),
                 "f"(d.x[4]), "f"(d.x[5]), "f"(d.x[6]), "f"(d.x[7]), "r"(ldm) : "memory");
}

template <int BF16, int A_COL, int B_COL, int BLOCKED, int BM, int BN, int BK, int WM, int WN, int STAGES,
          int PAD>
struct HgemmWmma {
  using T = typename Elem<BF16>::T;
  static constexpr int WARPS_M = BM / WM;
  static constexpr int WARPS_N = BN / WN;
  static constexpr int WARPS = WARPS_M * WARPS_N;
  static constexpr int THREADS = WARPS * 32;
  static constexpr int MT = WM / 16;                 // 16-row fragments of a warp
  static constexpr int NT = WN / 16;                 // 16-column fragments of a warp
  // the shared tiles as stored (see the header): rows x cols, cols contiguous, rows LD apart
  static constexpr int A_ROWS = BLOCKED ? BM / 16 : A_COL ? BK : BM;
  static constexpr int A_COLS = BLOCKED ? BK * 16 : A_COL ? BM : BK;
  static constexpr int B_ROWS = BLOCKED ? BK / 16 : B_COL ? BN : BK;
  static constexpr int B_COLS = BLOCKED ? BN * 16 : B_COL ? BK : BN;
  static constexpr int LDA = A_COLS + PAD;
  static constexpr int LDB = B_COLS + PAD;
  static constexpr int A_STAGE = A_ROWS * LDA;       // elements
  static constexpr int B_STAGE = B_ROWS * LDB;
  static constexpr int RING_BYTES = 2 * STAGES * (A_STAGE + B_STAGE);
  static constexpr int EPI_BYTES = WARPS * 256 * 4;  // a 16 x 16 FP32 scratch a warp, after the ring
  static constexpr int SMEM_BYTES = RING_BYTES > EPI_BYTES ? RING_BYTES : EPI_BYTES;

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles divide the block tile");
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "whole 16 x 16 x 16 fragments");
  static_assert(PAD % 8 == 0, "ldm a multiple of 16 bytes; 16-byte cp.async destinations");
  static_assert(!BLOCKED || (PAD == 0 && !A_COL && !B_COL), "the blocked layout's tiles are dense, rows only");
  static_assert(STAGES >= 1 && STAGES <= 3, "1 to 3 slices in the ring");
  static_assert(THREADS >= 32 && THREADS <= 1024, "block size");
  static_assert(MT * NT * 8 <= 128, "accumulators a thread (Python: MAX_ACC)");
  // the Python rules read the device; these bounds are the largest any sm_80/sm_90 part allows
  // (65536 registers and 227 KB of opted-in shared memory a block)
  static_assert(MT * NT * 8 + 8 * (MT + 1) + 32 <= (65536 / THREADS < 255 ? 65536 / THREADS : 255),
                "registers: accumulators + fragments + overhead (Python: registers_needed)");
  static_assert(SMEM_BYTES <= 227 * 1024, "shared memory a block (Python: smem_bytes)");

  // 16 bytes global -> shared, or 16 zero bytes where `valid` is false (src-size 0 reads nothing)
  static __device__ __forceinline__ void copy16(T* dst, const T* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
  }
  static __device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
  template <int N>
  static __device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

  // rows [row0, row0 + ROWS) x columns [col0, col0 + COLS) of a stored matrix (rows x cols, rows
  // `ld` apart) into dst [ROWS][LD]; chunks outside the matrix are zeros
  template <int ROWS, int COLS, int LD>
  static __device__ __forceinline__ void stage(T* dst, const T* src, size_t ld, int row0, int col0, int rows,
                                               int cols) {
    constexpr int PER_ROW = COLS / 8;
    for (int i = threadIdx.x; i < ROWS * PER_ROW; i += THREADS) {
      const int r = i / PER_ROW, c = (i % PER_ROW) * 8;
      const bool ok = row0 + r < rows && col0 + c < cols;
      copy16(dst + r * LD + c, ok ? src + (size_t)(row0 + r) * ld + col0 + c : src, ok);
    }
  }

  static __device__ __forceinline__ void load_slice(T* as, T* bs, const T* A, const T* B, int M, int N, int K,
                                                    int m0, int n0, int kt) {
    const int k0 = kt * BK;
    if constexpr (BLOCKED) {
      // a row of 16 x 16 tiles is one contiguous run: A's is K * 16 long, B's N * 16
      stage<A_ROWS, A_COLS, LDA>(as, A, (size_t)K * 16, m0 / 16, k0 * 16, M / 16, K * 16);
      stage<B_ROWS, B_COLS, LDB>(bs, B, (size_t)N * 16, k0 / 16, n0 * 16, K / 16, N * 16);
    } else {
      if constexpr (A_COL) stage<A_ROWS, A_COLS, LDA>(as, A, M, k0, m0, K, M);
      else stage<A_ROWS, A_COLS, LDA>(as, A, K, m0, k0, M, K);
      if constexpr (B_COL) stage<B_ROWS, B_COLS, LDB>(bs, B, K, n0, k0, N, K);
      else stage<B_ROWS, B_COLS, LDB>(bs, B, N, k0, n0, K, N);
    }
  }

  // origin of the A fragment at rows [r, r + 16) of the block tile, k [kk, kk + 16) of the slice
  static __device__ __forceinline__ const T* a_frag(const T* as, int r, int kk) {
    if constexpr (BLOCKED) return as + (r / 16) * LDA + kk * 16;
    else if constexpr (A_COL) return as + kk * LDA + r;
    else return as + r * LDA + kk;
  }
  // origin of the B fragment at k [kk, kk + 16), columns [c, c + 16) of the block tile
  static __device__ __forceinline__ const T* b_frag(const T* bs, int kk, int c) {
    if constexpr (BLOCKED) return bs + (kk / 16) * LDB + c * 16;
    else if constexpr (B_COL) return bs + c * LDB + kk;
    else return bs + kk * LDB + c;
  }

  static __device__ __forceinline__ void multiply(FragC (&acc)[MT][NT], const T* as, const T* bs, int wm, int wn) {
    constexpr unsigned LDM_A = BLOCKED ? 16 : LDA, LDM_B = BLOCKED ? 16 : LDB;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      FragAB<BF16> fa[MT];
#pragma unroll
      for (int i = 0; i < MT; ++i) load_frag<0, A_COL, BF16>(fa[i], a_frag(as, wm * WM + i * 16, kk), LDM_A);
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        FragAB<BF16> fb;         // one B fragment live at a time: MT + 1 fragments, not MT + NT
        load_frag<1, B_COL, BF16>(fb, b_frag(bs, kk, wn * WN + j * 16), LDM_B);
#pragma unroll
        for (int i = 0; i < MT; ++i) mma<A_COL, B_COL, BF16>(acc[i][j], fa[i], fb);
      }
    }
  }

  static __device__ __forceinline__ unsigned pack2(float lo, float hi) {
    if constexpr (BF16) {
      __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
      return *reinterpret_cast<unsigned*>(&h);
    } else {
      __half2 h = __floats2half2_rn(lo, hi);
      return *reinterpret_cast<unsigned*>(&h);
    }
  }
  static __device__ __forceinline__ T narrow(float v) {
    if constexpr (BF16) return __float2bfloat16_rn(v);
    else return __float2half_rn(v);
  }

  static __device__ void run(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ D, int M, int N,
                             int K, unsigned char* smem) {
    T* as = reinterpret_cast<T*>(smem);
    T* bs = as + STAGES * A_STAGE;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int slices = (K + BK - 1) / BK;

    FragC acc[MT][NT];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[i][j].x[e] = 0.0f;

    if constexpr (STAGES == 1) {
      for (int kt = 0; kt < slices; ++kt) {
        load_slice(as, bs, A, B, M, N, K, m0, n0, kt);
        commit();
        wait<0>();
        __syncthreads();        // the slice is in (everyone's copies)
        multiply(acc, as, bs, wm, wn);
        __syncthreads();        // everyone has read it before the next slice overwrites it
      }
    } else {
#pragma unroll
      for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) load_slice(as + s * A_STAGE, bs + s * B_STAGE, A, B, M, N, K, m0, n0, s);
        commit();   // an empty group past the last slice keeps the count wait() relies on
      }
      for (int kt = 0; kt < slices; ++kt) {
        wait<STAGES - 2>();     // slice kt has landed (this thread's copies) ...
        __syncthreads();        // ... and everyone's; the slot refilled below was read last step
        const int next = kt + STAGES - 1;
        if (next < slices)
          load_slice(as + (next % STAGES) * A_STAGE, bs + (next % STAGES) * B_STAGE, A, B, M, N, K, m0, n0, next);
        commit();
        multiply(acc, as + (kt % STAGES) * A_STAGE, bs + (kt % STAGES) * B_STAGE, wm, wn);
      }
      wait<0>();                // only empty groups are left; nothing lands in the scratch below
      __syncthreads();          // every warp is done with the ring before it becomes scratch
    }

    // epilogue: each fragment through the warp's scratch; lane l takes row l / 2, 8 columns from
    // (l % 2) * 8, which in the blocked layout are the 8 contiguous elements l * 8 .. l * 8 + 7
    float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
    const int r = lane / 2, c = (lane % 2) * 8;
    const bool vec = BLOCKED || N % 8 == 0;     // 16-byte stores: rows of D start 16-byte aligned
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        store_acc(scratch, acc[i][j], 16);
        __syncwarp();
        const int row = m0 + wm * WM + i * 16 + r, col = n0 + wn * WN + j * 16 + c;
        float v[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = scratch[r * 16 + c + e];
        if (row < M && col < N) {
          T* out = BLOCKED ? D + ((size_t)(row / 16) * (N / 16) + col / 16) * 256 + lane * 8
                           : D + (size_t)row * N + col;
          if (vec && col + 8 <= N) {
            *reinterpret_cast<uint4*>(out) = make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]),
                                                        pack2(v[4], v[5]), pack2(v[6], v[7]));
          } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
              if (col + e < N) out[e] = narrow(v[e]);
          }
        }
        __syncwarp();           // all lanes have read the scratch before the next fragment's store
      }
  }
};

}  // namespace autosched_wmma

template <int BF16, int A_COL, int B_COL, int BLOCKED, int BM, int BN, int BK, int WM, int WN, int STAGES,
          int PAD>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
hgemm_wmma(const typename autosched_wmma::Elem<BF16>::T* __restrict__ A,
           const typename autosched_wmma::Elem<BF16>::T* __restrict__ B,
           typename autosched_wmma::Elem<BF16>::T* __restrict__ D, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  autosched_wmma::HgemmWmma<BF16, A_COL, B_COL, BLOCKED, BM, BN, BK, WM, WN, STAGES, PAD>::run(A, B, D, M, N, K,
                                                                                              smem);
}

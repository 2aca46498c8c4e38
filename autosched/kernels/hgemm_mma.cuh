// FP16 or BF16 (BF16) GEMM on tensor cores, FP32 accumulation, output in the input type:
// C (M, N) = A . B, A row-major (M, K) or, with A_COL, stored (K, M); B row-major (K, N) or, with
// B_COL, stored (N, K) as a linear layer's weight is.
//
// The warp-level MMA is mma.sync m16n8k16 with its operands read from shared memory by ldmatrix:
// the instructions the tensor-core seed's wmma::mma_sync (16x16x16) is built from, written out in
// PTX so the kernel needs no header beyond cuda_fp16.h and cuda_bf16.h (NVRTC's wheels ship no
// <mma.h> internals).  BF16 changes only the MMA's operand type and the output conversion: its
// m16n8k16 fragments are laid out as FP16's.
//
// A block owns a BM x BN tile of C and walks K in BK slices; each warp owns WM x WN of it, that is
// (WM/16) x (WN/8) accumulator tiles of 16 x 8.  Slices move global -> shared with 16-byte cp.async
// in a STAGES-deep ring (STAGES-1 slices in flight while one is multiplied); PAD halves are added
// to each shared row so the eight row addresses of an ldmatrix fall in different banks.  Each
// operand's shared tile holds its slice as stored (A: [BM][BK + PAD], or [BK][BM + PAD] with A_COL;
// B: [BK][BN + PAD], or [BN][BK + PAD] with B_COL); ldmatrix.trans turns the K-major ones into
// the row (A) and column (B) fragments mma wants.
//
// Edges: the stored rows of A and B are multiples of 8 long (K where A is row-major or B stored
// (N, K), M where A is stored (K, M), N where B is row-major), so every 16-byte chunk is whole and
// aligned (the workload refuses other sizes); the other dimensions are free.  Chunks outside the matrices are zero-filled by
// cp.async; stores outside C are skipped.
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace autosched_hgemm {

template <int BF16> struct Elem { using T = half; };
template <> struct Elem<1> { using T = __nv_bfloat16; };

template <int B_COL, int BM, int BN, int BK, int WM, int WN, int STAGES, int PAD, int A_COL, int BF16>
struct HgemmMma {
  using T = typename Elem<BF16>::T;
  static constexpr int WARPS_M = BM / WM;
  static constexpr int WARPS_N = BN / WN;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int MT = WM / 16;                 // 16-row tiles of a warp
  static constexpr int NT = WN / 8;                  // 8-column tiles of a warp
  // shared A: [BM][BK + PAD] as stored, or [BK][BM + PAD] holding the (M, K) tile column-major
  static constexpr int LDA = A_COL ? BM + PAD : BK + PAD;
  // shared B: [BK][BN + PAD] as stored, or [BN][BK + PAD] holding the (K, N) tile column-major
  static constexpr int LDB = B_COL ? BK + PAD : BN + PAD;
  static constexpr int A_STAGE = A_COL ? BK * LDA : BM * LDA;     // elements (2 bytes)
  static constexpr int B_STAGE = B_COL ? BN * LDB : BK * LDB;
  static constexpr int SMEM_BYTES = 2 * STAGES * (A_STAGE + B_STAGE);

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles divide the block tile");
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "whole 16 x 16 x 16 steps");
  static_assert(PAD % 8 == 0, "shared rows start on 16-byte boundaries (cp.async, ldmatrix)");
  static_assert(STAGES >= 2 && STAGES <= 4, "a cp.async ring of 2 to 4 slices");
  static_assert(THREADS <= 1024, "block size");

  // 16 bytes global -> shared, or 16 zero bytes where `valid` is false (src-size 0 reads nothing)
  static __device__ __forceinline__ void copy16(T* dst, const T* src, bool valid) {
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
  }
  static __device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
  template <int N>
  static __device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

  // four 8 x 8 b16 matrices from shared memory, one row address per lane (lanes 8i..8i+7: matrix i)
  template <bool TRANS>
  static __device__ __forceinline__ void ldmatrix4(unsigned (&r)[4], const T* p) {
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
    if constexpr (TRANS)
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
    else
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
  }

  static __device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if constexpr (BF16)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                   "{%8, %9}, {%0, %1, %2, %3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }

  // issue the copies of slice `kt` into one ring slot
  static __device__ __forceinline__ void load_slice(T* as, T* bs, const T* A, const T* B,
                                                    int M, int N, int K, int m0, int n0, int kt) {
    const int k0 = kt * BK;
    constexpr int A_CHUNKS = BM * BK / 8;
    if constexpr (A_COL) {
      for (int i = threadIdx.x; i < A_CHUNKS; i += THREADS) {
        const int r = i / (BM / 8), c = (i % (BM / 8)) * 8;       // r: k, c: row m of C
        const bool ok = k0 + r < K && m0 + c < M;
        copy16(as + r * LDA + c, ok ? A + (size_t)(k0 + r) * M + m0 + c : A, ok);
      }
    } else {
      for (int i = threadIdx.x; i < A_CHUNKS; i += THREADS) {
        const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
        const bool ok = m0 + r < M && k0 + c < K;
        copy16(as + r * LDA + c, ok ? A + (size_t)(m0 + r) * K + k0 + c : A, ok);
      }
    }
    if constexpr (B_COL) {
      constexpr int B_CHUNKS = BN * BK / 8;
      for (int i = threadIdx.x; i < B_CHUNKS; i += THREADS) {
        const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;       // r: column n of C, c: k
        const bool ok = n0 + r < N && k0 + c < K;
        copy16(bs + r * LDB + c, ok ? B + (size_t)(n0 + r) * K + k0 + c : B, ok);
      }
    } else {
      constexpr int B_CHUNKS = BK * BN / 8;
      for (int i = threadIdx.x; i < B_CHUNKS; i += THREADS) {
        const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;       // r: k, c: column n
        const bool ok = k0 + r < K && n0 + c < N;
        copy16(bs + r * LDB + c, ok ? B + (size_t)(k0 + r) * N + n0 + c : B, ok);
      }
    }
  }

  static __device__ void run(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                             int M, int N, int K, T* smem) {
    T* as = smem;
    T* bs = smem + STAGES * A_STAGE;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int slices = (K + BK - 1) / BK;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < slices) load_slice(as + s * A_STAGE, bs + s * B_STAGE, A, B, M, N, K, m0, n0, s);
      commit();     // an empty group past the last slice keeps the count wait() relies on
    }
    // the lane's row address in each ldmatrix: A (16 x 16, row-major): rows lane % 16, columns
    // (lane / 16) * 8, which hands back the four 8 x 8 quarters in mma's A order.  B, two 8-column
    // tiles at once: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
    const int a_row = lane % 16, a_col = (lane / 16) * 8;
    // A_COL (trans): the same four quarters (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15),
    // (m 8-15, k 8-15), each read as 8 rows of k from the K-major tile
    const int ac_k = (lane % 8) + (lane / 16) * 8, ac_m = ((lane / 8) % 2) * 8;
    const int b_k = (lane % 8) + ((lane / 8) % 2) * 8, b_n = (lane / 16) * 8;     // row-major B (trans)
    const int bc_n = (lane % 8) + (lane / 16) * 8, bc_k = ((lane / 8) % 2) * 8;   // B_COL: rows are n
    for (int kt = 0; kt < slices; ++kt) {
      wait<STAGES - 2>();       // slice kt has landed (this thread's copies) ...
      __syncthreads();          // ... and everyone's; the slot refilled below was read last step
      const int next = kt + STAGES - 1;
      if (next < slices)
        load_slice(as + (next % STAGES) * A_STAGE, bs + (next % STAGES) * B_STAGE, A, B, M, N, K, m0, n0, next);
      commit();
      const T* a = as + (kt % STAGES) * A_STAGE;
      const T* b = bs + (kt % STAGES) * B_STAGE;
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        unsigned fa[MT][4], fb[NT][2];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          const int m = wm * WM + i * 16;
          if constexpr (A_COL) ldmatrix4<true>(fa[i], a + (kk + ac_k) * LDA + m + ac_m);
          else ldmatrix4<false>(fa[i], a + (m + a_row) * LDA + kk + a_col);
        }
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
          unsigned r[4];
          const int n = wn * WN + j * 8;
          if constexpr (B_COL) ldmatrix4<false>(r, b + (n + bc_n) * LDB + kk + bc_k);
          else ldmatrix4<true>(r, b + (kk + b_k) * LDB + n + b_n);
          fb[j][0] = r[0]; fb[j][1] = r[1]; fb[j + 1][0] = r[2]; fb[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int j = 0; j < NT; ++j) mma(acc[i][j], fa[i], fb[j][0], fb[j][1]);
      }
    }
    wait<0>();

    // accumulator tile 16 x 8: c0, c1 at row lane / 4, columns (lane % 4) * 2 + {0, 1}; c2, c3 eight rows down
    const bool pairs = N % 2 == 0;       // a 2-element store needs an even column in an even-width row
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = m0 + wm * WM + i * 16 + lane / 4 + h * 8;
          const int col = n0 + wn * WN + j * 8 + (lane % 4) * 2;
          if (row >= M || col >= N) continue;
          T* out = C + (size_t)row * N + col;
          const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
          if constexpr (BF16) {
            if (pairs && col + 1 < N) {
              *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(v0, v1);
            } else {
              out[0] = __float2bfloat16_rn(v0);
              if (col + 1 < N) out[1] = __float2bfloat16_rn(v1);
            }
          } else {
            if (pairs && col + 1 < N) {
              *reinterpret_cast<__half2*>(out) = __floats2half2_rn(v0, v1);
            } else {
              out[0] = __float2half_rn(v0);
              if (col + 1 < N) out[1] = __float2half_rn(v1);
            }
          }
        }
  }
};

}  // namespace autosched_hgemm

// A_COL and BF16 came after the first eight arguments: defaulted, so the kernels of FP16 nn and nt
// keep the names (and cache keys) they had
template <int B_COL, int BM, int BN, int BK, int WM, int WN, int STAGES, int PAD, int A_COL = 0, int BF16 = 0>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
hgemm_mma(const typename autosched_hgemm::Elem<BF16>::T* __restrict__ A,
          const typename autosched_hgemm::Elem<BF16>::T* __restrict__ B,
          typename autosched_hgemm::Elem<BF16>::T* __restrict__ C, int M, int N, int K) {
  using Kernel = autosched_hgemm::HgemmMma<B_COL, BM, BN, BK, WM, WN, STAGES, PAD, A_COL, BF16>;
  extern __shared__ __align__(128) unsigned char smem[];
  Kernel::run(A, B, C, M, N, K, reinterpret_cast<typename Kernel::T*>(smem));
}

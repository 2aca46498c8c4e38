// FP16 GEMM micro-kernel for a dynamic M (DietCode): C (M, N) = A (M, K) . B, A row-major, B row-major
// (K, N) or, with B_COL, stored (N, K).  One compiled kernel serves every M of a range; only the grid
// (ceil(N/BN), ceil(M/BM)) changes with M.
//
// The same warp-level scheme as hgemm_mma.cuh (mma.sync m16n8k16 fed by ldmatrix from a STAGES-deep
// cp.async ring), written on its own so that this header's source hash, and the build cache and
// database rows keyed by it, do not move when that template changes.  What is new:
//
//   * tiles need not be powers of two: WM and WN any multiple of 16, BM = warps * WM (so 48, 80, 96,
//     ... rows), sampled from the range's largest M rather than as divisors of one shape;
//   * UNROLL is not a choice: it must equal the product of the inner tile sizes (MT * NT * BK/16, the
//     MMAs a warp issues per K slice), and the inner loops are unrolled that far explicitly, so the
//     code nvcc emits is the same for an M that divides the tiles and one that does not;
//   * LOCAL_PAD picks how the ragged edge of M (and N, K) is handled:
//       1  padded tiles: every load fills the whole shared tile, zero (the accumulator's init value)
//          outside the matrices, so the compute loop carries no predicate at all; only the final
//          store is guarded.  This is what hgemm_mma.cuh already does (cp.async src-size 0).
//       0  guarded loads and compute: a chunk outside the matrix is not loaded (rows past M keep
//          whatever the ring slot held), and each MMA tile of the compute loop is predicated on its
//          rows and columns lying inside C (the predicates local padding removes).  Chunks past K
//          are still zeroed: garbage there would reach valid outputs.
#pragma once
#include <cuda_fp16.h>

namespace autosched_hgemm_dyn {

__device__ __forceinline__ void copy16(half* dst, const half* src, bool valid) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy16_always(half* dst, const half* src) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}
__device__ __forceinline__ void zero16(half* dst) { *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0); }
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

template <bool TRANS>
__device__ __forceinline__ void ldmatrix4(unsigned (&r)[4], const half* p) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int B_COL, int BM, int BN, int BK, int WM, int WN, int STAGES, int PAD, int LOCAL_PAD, int UNROLL>
struct HgemmDyn {
  static constexpr int WARPS_M = BM / WM;
  static constexpr int WARPS_N = BN / WN;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int MT = WM / 16;                 // 16-row MMA tiles of a warp
  static constexpr int NT = WN / 8;                  // 8-column MMA tiles of a warp
  static constexpr int KS = BK / 16;                 // k16 steps of a slice
  static constexpr int LDA = BK + PAD;               // shared A: [BM][BK + PAD]
  static constexpr int LDB = B_COL ? BK + PAD : BN + PAD;
  static constexpr int A_STAGE = BM * LDA;           // halves
  static constexpr int B_STAGE = B_COL ? BN * LDB : BK * LDB;

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles divide the block tile");
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "whole 16 x 16 x 16 steps");
  static_assert(PAD % 8 == 0, "shared rows start on 16-byte boundaries (cp.async, ldmatrix)");
  static_assert(STAGES >= 2 && STAGES <= 4, "a cp.async ring of 2 to 4 slices");
  static_assert(THREADS <= 1024, "block size");
  static_assert(LOCAL_PAD == 0 || LOCAL_PAD == 1, "LOCAL_PAD is a flag");
  static_assert(UNROLL == MT * NT * KS, "UNROLL is the product of the inner tile sizes, never chosen alone");

  // one 16-byte chunk of a slice: padded (zero-filled where outside) or guarded (skipped where the
  // row is outside the matrix, zeroed where past K)
  static __device__ __forceinline__ void chunk(half* dst, const half* src, bool row_in, bool k_in) {
    if constexpr (LOCAL_PAD) {
      copy16(dst, src, row_in && k_in);
    } else {
      if (row_in && k_in) copy16_always(dst, src);
      else if (row_in) zero16(dst);
    }
  }

  static __device__ __forceinline__ void load_slice(half* as, half* bs, const half* A, const half* B,
                                                    int M, int N, int K, int m0, int n0, int kt) {
    const int k0 = kt * BK;
    constexpr int A_CHUNKS = BM * BK / 8;
    for (int i = threadIdx.x; i < A_CHUNKS; i += THREADS) {
      const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
      const bool row_in = m0 + r < M, k_in = k0 + c < K;
      chunk(as + r * LDA + c, row_in && k_in ? A + (size_t)(m0 + r) * K + k0 + c : A, row_in, k_in);
    }
    if constexpr (B_COL) {
      constexpr int B_CHUNKS = BN * BK / 8;
      for (int i = threadIdx.x; i < B_CHUNKS; i += THREADS) {
        const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;       // r: column n of C, c: k
        const bool row_in = n0 + r < N, k_in = k0 + c < K;
        chunk(bs + r * LDB + c, row_in && k_in ? B + (size_t)(n0 + r) * K + k0 + c : B, row_in, k_in);
      }
    } else {
      constexpr int B_CHUNKS = BK * BN / 8;
      for (int i = threadIdx.x; i < B_CHUNKS; i += THREADS) {
        const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;       // r: k, c: column n
        const bool col_in = n0 + c < N, k_in = k0 + r < K;
        // a row of B past K must read as zero whatever the column (zeroed: "row_in" true, "k_in"
        // false); a column past N feeds only columns of C that are never stored (skipped)
        chunk(bs + r * LDB + c, col_in && k_in ? B + (size_t)(k0 + r) * N + n0 + c : B, col_in || !k_in,
              col_in && k_in);
      }
    }
  }

  static __device__ void run(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C,
                             int M, int N, int K, half* smem) {
    half* as = smem;
    half* bs = smem + STAGES * A_STAGE;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int slices = (K + BK - 1) / BK;
    // the warp's first row and column of C: the guarded variant's compute predicates read them
    const int wrow = m0 + wm * WM, wcol = n0 + wn * WN;

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
      commit();
    }
    const int a_row = lane % 16, a_col = (lane / 16) * 8;
    const int b_k = (lane % 8) + ((lane / 8) % 2) * 8, b_n = (lane / 16) * 8;
    const int bc_n = (lane % 8) + (lane / 16) * 8, bc_k = ((lane / 8) % 2) * 8;
    for (int kt = 0; kt < slices; ++kt) {
      wait<STAGES - 2>();
      __syncthreads();
      const int next = kt + STAGES - 1;
      if (next < slices)
        load_slice(as + (next % STAGES) * A_STAGE, bs + (next % STAGES) * B_STAGE, A, B, M, N, K, m0, n0, next);
      commit();
      const half* a = as + (kt % STAGES) * A_STAGE + (wm * WM) * LDA;
      const half* b = bs + (kt % STAGES) * B_STAGE;
      // UNROLL = KS * MT * NT MMAs, all unrolled: the body is the same for every M
#pragma unroll
      for (int ks = 0; ks < KS; ++ks) {
        const int kk = ks * 16;
        unsigned fa[MT][4], fb[NT][2];
#pragma unroll
        for (int i = 0; i < MT; ++i) ldmatrix4<false>(fa[i], a + (i * 16 + a_row) * LDA + kk + a_col);
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
          for (int j = 0; j < NT; ++j) {
            if constexpr (LOCAL_PAD) {
              mma(acc[i][j], fa[i], fb[j][0], fb[j][1]);
            } else {
              if (wrow + i * 16 < M && wcol + j * 8 < N) mma(acc[i][j], fa[i], fb[j][0], fb[j][1]);
            }
          }
      }
    }
    wait<0>();

    const bool pairs = N % 2 == 0;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = wrow + i * 16 + lane / 4 + h * 8;
          const int col = wcol + j * 8 + (lane % 4) * 2;
          if (row >= M || col >= N) continue;     // the one guard both variants keep
          half* out = C + (size_t)row * N + col;
          const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
          if (pairs && col + 1 < N) {
            *reinterpret_cast<__half2*>(out) = __floats2half2_rn(v0, v1);
          } else {
            out[0] = __float2half_rn(v0);
            if (col + 1 < N) out[1] = __float2half_rn(v1);
          }
        }
  }
};

}  // namespace autosched_hgemm_dyn

template <int B_COL, int BM, int BN, int BK, int WM, int WN, int STAGES, int PAD, int LOCAL_PAD, int UNROLL>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
hgemm_dyn(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];
  autosched_hgemm_dyn::HgemmDyn<B_COL, BM, BN, BK, WM, WN, STAGES, PAD, LOCAL_PAD, UNROLL>::run(
      A, B, C, M, N, K, reinterpret_cast<half*>(smem));
}

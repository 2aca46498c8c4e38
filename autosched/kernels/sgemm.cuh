// FP32 warptiling SGEMM: C (M, N) = A (M, K) . B (K, N), row-major (TRANS_A: A stored (K, M)).
//
// A block owns a BM x BN tile of C and walks K in BK slices staged in shared memory; each warp
// owns WM x WN of the block tile, cut into WMITER x WNITER sub-tiles, and each thread a TM x TN
// micro-tile of every sub-tile (registers).  Knobs beyond the seed's: STAGES (2: the next slice
// is fetched into registers while this one is computed, one barrier per slice), PAD (floats added
// to each shared row so the transposing stores of A spread over the banks), SPLITK (blockIdx.z
// takes a K range and atomically adds into C, which the caller zeroes first).
//
// Edges: any M, N, K.  Loads outside the matrices read zeros; stores outside are skipped.
// VEC_A / VEC_B (4 or 1) say whether rows are 16-byte aligned, so float4 loads are legal.
#pragma once

namespace autosched_sgemm {

template <int TRANS_A, int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES,
          int PAD, int SPLITK, int VEC_A, int VEC_B>
struct Sgemm {
  static constexpr int WARPS = (BM / WM) * (BN / WN);
  static constexpr int THREADS = WARPS * 32;
  static constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
  static constexpr int WSUBM = WM / WMITER;
  static constexpr int WSUBN = WN / WNITER;
  static constexpr int LDA = BM + PAD;    // shared A is stored transposed: [BK][BM + PAD]
  static constexpr int LDB = BN + PAD;    // shared B: [BK][BN + PAD]
  static constexpr int A_PER_THREAD = BM * BK / THREADS;   // floats each thread stages per slice
  static constexpr int B_PER_THREAD = BK * BN / THREADS;
  static constexpr int SMEM_BYTES = 4 * STAGES * BK * (LDA + LDB);
  static constexpr int STATIC_SMEM_LIMIT = 48 * 1024;     // what a launch gets without opting in

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the block tile");
  static_assert(WMITER >= 1 && (WM * WN) % (32 * TM * TN * WNITER) == 0, "warp tile vs thread tiles");
  static_assert(WM % WMITER == 0 && WN % WNITER == 0, "sub-tiles divide the warp tile");
  static_assert(WSUBM % TM == 0 && WSUBN % TN == 0 && (WSUBM / TM) * (WSUBN / TN) == 32,
                "a sub-tile is 32 thread tiles");
  static_assert(THREADS <= 1024, "block size");
  static_assert((BM * BK) % (4 * THREADS) == 0 && (BN * BK) % (4 * THREADS) == 0,
                "slices split into whole float4s per thread");
  static_assert(STAGES == 1 || STAGES == 2, "one or two shared stages");
  static_assert(VEC_A == 1 || VEC_A == 4, "A loads: float or float4");
  static_assert(VEC_B == 1 || VEC_B == 4, "B loads: float or float4");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && LDA % 4 == 0 && LDB % 4 == 0 && (BK * LDA) % 4 == 0,
                "fragments are read from shared memory as aligned float4s");

  // Element (r, c) of a rows x cols row-major matrix, zero outside it.
  __device__ static __forceinline__ float at(const float* __restrict__ p, int r, int c, int rows, int cols) {
    return (r < rows && c < cols) ? __ldg(p + (long long)r * cols + c) : 0.f;
  }

  // Four consecutive elements of a row, with one 16-byte load where the row allows it.
  template <int VEC>
  __device__ static __forceinline__ float4 at4(const float* __restrict__ p, int r, int c, int rows, int cols) {
    if (VEC == 4 && r < rows && c + 3 < cols)
      return __ldg(reinterpret_cast<const float4*>(p + (long long)r * cols + c));
    return make_float4(at(p, r, c, rows, cols), at(p, r, c + 1, rows, cols), at(p, r, c + 2, rows, cols),
                       at(p, r, c + 3, rows, cols));
  }

  // Global -> registers: this thread's share of the A slice (BM x BK) and B slice (BK x BN).
  __device__ static __forceinline__ void fetch(const float* __restrict__ A, const float* __restrict__ B,
                                               int M, int N, int K, int bm, int bn, int k0,
                                               float4 (&ra)[A_PER_THREAD / 4], float4 (&rb)[B_PER_THREAD / 4]) {
#pragma unroll
    for (int i = 0; i < A_PER_THREAD / 4; ++i) {
      const int idx = threadIdx.x + i * THREADS;          // float4 index within the slice
      if constexpr (TRANS_A) {   // stored (K, M): a slice row is BM floats along M
        const int r = idx / (BM / 4), c = (idx % (BM / 4)) * 4;
        ra[i] = at4<VEC_A>(A, k0 + r, bm + c, K, M);
      } else {                   // stored (M, K): a slice row is BK floats along K
        const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
        ra[i] = at4<VEC_A>(A, bm + r, k0 + c, M, K);
      }
    }
#pragma unroll
    for (int i = 0; i < B_PER_THREAD / 4; ++i) {
      const int idx = threadIdx.x + i * THREADS;
      const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      rb[i] = at4<VEC_B>(B, k0 + r, bn + c, K, N);
    }
  }

  // Registers -> shared stage (A transposed to [k][m], so the compute loop reads rows of both).
  __device__ static __forceinline__ void stash(float* As, float* Bs, const float4 (&ra)[A_PER_THREAD / 4],
                                               const float4 (&rb)[B_PER_THREAD / 4]) {
#pragma unroll
    for (int i = 0; i < A_PER_THREAD / 4; ++i) {
      const int idx = threadIdx.x + i * THREADS;
      if constexpr (TRANS_A) {
        const int r = idx / (BM / 4), c = (idx % (BM / 4)) * 4;
        float* d = As + r * LDA + c;
        d[0] = ra[i].x; d[1] = ra[i].y; d[2] = ra[i].z; d[3] = ra[i].w;
      } else {
        const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
        As[(c + 0) * LDA + r] = ra[i].x;
        As[(c + 1) * LDA + r] = ra[i].y;
        As[(c + 2) * LDA + r] = ra[i].z;
        As[(c + 3) * LDA + r] = ra[i].w;
      }
    }
#pragma unroll
    for (int i = 0; i < B_PER_THREAD / 4; ++i) {
      const int idx = threadIdx.x + i * THREADS;
      const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      float* d = Bs + r * LDB + c;
      d[0] = rb[i].x; d[1] = rb[i].y; d[2] = rb[i].z; d[3] = rb[i].w;
    }
  }

  __device__ static __forceinline__ void run(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K) {
    // up to 48 KB a static array, as before; beyond it dynamic shared memory, which the launcher
    // opts in to (cudaFuncAttributeMaxDynamicSharedMemorySize) and sizes to SMEM_BYTES
    float* smem;
    if constexpr (SMEM_BYTES <= STATIC_SMEM_LIMIT) {
      __shared__ __align__(16) float stage_buf[SMEM_BYTES / 4];
      smem = stage_buf;
    } else {
      extern __shared__ __align__(16) float dyn_buf[];
      smem = dyn_buf;
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int t_row = lane / (WSUBN / TN), t_col = lane % (WSUBN / TN);
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;

    // this split's K range, in whole slices
    const int slices_total = (K + BK - 1) / BK;
    const int per_split = (slices_total + SPLITK - 1) / SPLITK;
    const int s_begin = blockIdx.z * per_split;
    const int s_end = min(slices_total, s_begin + per_split);

    float acc[WMITER * TM][WNITER * TN];
#pragma unroll
    for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
      for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = 0.f;

    float4 ra[A_PER_THREAD / 4], rb[B_PER_THREAD / 4];
    if (s_begin < s_end) {
      fetch(A, B, M, N, K, bm, bn, s_begin * BK, ra, rb);
      stash(smem, smem + BK * LDA, ra, rb);
    }
    __syncthreads();

    for (int s = s_begin; s < s_end; ++s) {
      const int stage = STAGES == 2 ? (s - s_begin) & 1 : 0;
      const float* As = smem + stage * BK * (LDA + LDB);
      const float* Bs = As + BK * LDA;
      const bool more = s + 1 < s_end;
      if (STAGES == 2 && more) fetch(A, B, M, N, K, bm, bn, (s + 1) * BK, ra, rb);

#pragma unroll
      for (int k = 0; k < BK; ++k) {
        // 16-byte shared loads (LDS.128): every offset here is a multiple of 4 floats (TM, TN,
        // WSUBM, WSUBN, WM, WN, LDA and LDB all are) and the stages start 16-byte aligned
        float a[WMITER * TM], b[WNITER * TN];
#pragma unroll
        for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
          for (int i = 0; i < TM; i += 4) {
            const float4 v = *reinterpret_cast<const float4*>(
                As + k * LDA + warp_row * WM + wi * WSUBM + t_row * TM + i);
            a[wi * TM + i] = v.x; a[wi * TM + i + 1] = v.y; a[wi * TM + i + 2] = v.z; a[wi * TM + i + 3] = v.w;
          }
#pragma unroll
        for (int wj = 0; wj < WNITER; ++wj)
#pragma unroll
          for (int j = 0; j < TN; j += 4) {
            const float4 v = *reinterpret_cast<const float4*>(
                Bs + k * LDB + warp_col * WN + wj * WSUBN + t_col * TN + j);
            b[wj * TN + j] = v.x; b[wj * TN + j + 1] = v.y; b[wj * TN + j + 2] = v.z; b[wj * TN + j + 3] = v.w;
          }
#pragma unroll
        for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
          for (int j = 0; j < WNITER * TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
      }

      if constexpr (STAGES == 2) {
        if (more) {
          float* nA = smem + (stage ^ 1) * BK * (LDA + LDB);
          stash(nA, nA + BK * LDA, ra, rb);
        }
        __syncthreads();
      } else {
        __syncthreads();                     // everyone is done reading the only stage
        if (more) {
          fetch(A, B, M, N, K, bm, bn, (s + 1) * BK, ra, rb);
          stash(smem, smem + BK * LDA, ra, rb);
        }
        __syncthreads();
      }
    }

#pragma unroll
    for (int wi = 0; wi < WMITER; ++wi)
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const int row = bm + warp_row * WM + wi * WSUBM + t_row * TM + i;
        if (row >= M) continue;
#pragma unroll
        for (int wj = 0; wj < WNITER; ++wj) {
          const int col0 = bn + warp_col * WN + wj * WSUBN + t_col * TN;
          float* c = C + (long long)row * N + col0;
          const float* v = &acc[wi * TM + i][wj * TN];
          if constexpr (SPLITK == 1 && VEC_B == 4 && TN % 4 == 0) {
            // N % 4 == 0 (VEC_B) and col0 % 4 == 0 (TN % 4): whole float4s are aligned
            if (col0 + TN <= N) {
#pragma unroll
              for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(c + j) = make_float4(v[j], v[j + 1], v[j + 2], v[j + 3]);
              continue;
            }
          }
#pragma unroll
          for (int j = 0; j < TN; ++j) {
            if (col0 + j < N) {
              if constexpr (SPLITK > 1) atomicAdd(c + j, v[j]);
              else c[j] = v[j];
            }
          }
        }
      }
  }
};

}  // namespace autosched_sgemm

template <int TRANS_A, int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int STAGES,
          int PAD, int SPLITK, int VEC_A, int VEC_B>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)
sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  autosched_sgemm::Sgemm<TRANS_A, BM, BN, BK, WM, WN, WNITER, TM, TN, STAGES, PAD, SPLITK, VEC_A,
                         VEC_B>::run(A, B, C, M, N, K);
}

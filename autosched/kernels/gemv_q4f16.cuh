// q4f16_1 dequantize-GEMV: C[N] = dequant(A_q, A_scale) . V
//
//   A_q     (N, K/8)  uint32, eight 4-bit values a word, stored in the tiled layout
//                     (N/LN, KW/LK, LN, LK) of words; nibble order inside a word depends on the
//                     compute path (see the host packer, autosched/layouts.py)
//   A_scale (N, K/32) fp16, stored (N/LN, K/32, LN)
//   V       (K)       fp16
//   C       (N)       fp16,  weight = (q - 7) * scale
//
// gemv_q4f16 stores C; gemv_q4f16_fused applies a decode step's epilogue to it (epilogue.cuh).
//
// One template covers the four schedule templates of the seed (vector load over N or K x vector
// compute over N or K), both bindings of threadIdx.x, the thread tile and the layout.  Every
// parameter comes from a validated config; static_asserts repeat the space's constraints so that
// a config that slipped past Python fails at compile time, not with wrong numbers.
#pragma once
#include <cuda_fp16.h>
#include "epilogue.cuh"
#include "pdl.cuh"

// NVRTC ships no <stdint.h>: plain types of the widths we need
using u32 = unsigned int;
using i64 = long long;

namespace autosched_gemv {

// Read-only load of VEC consecutive words (4, 8 or 16 bytes).  HINT 1 streams past L1 (weights
// are read once) and asks L2 to fetch the whole 256-byte line pair, so DRAM sees long bursts.
template <int VEC, int HINT>
__device__ __forceinline__ void load_words(const u32* __restrict__ p, u32* dst) {
  if constexpr (HINT == 1) {
    if constexpr (VEC == 4) {
      asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(dst[0]), "=r"(dst[1]), "=r"(dst[2]), "=r"(dst[3]) : "l"(p));
    } else if constexpr (VEC == 2) {
      asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0,%1}, [%2];"
                   : "=r"(dst[0]), "=r"(dst[1]) : "l"(p));
    } else {
      asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(dst[0]) : "l"(p));
    }
  } else if constexpr (VEC == 4) {
    const uint4 t = __ldg(reinterpret_cast<const uint4*>(p));
    dst[0] = t.x; dst[1] = t.y; dst[2] = t.z; dst[3] = t.w;
  } else if constexpr (VEC == 2) {
    const uint2 t = __ldg(reinterpret_cast<const uint2*>(p));
    dst[0] = t.x; dst[1] = t.y;
  } else {
    dst[0] = __ldg(p);
  }
}

// Two nibbles -> half2 (1024 + q_lo, 1024 + q_hi) with one LOP3: OR-ing a nibble into the mantissa
// of 1024.0h gives 1024 + q exactly, so no int->float conversion is needed.
__device__ __forceinline__ __half2 nibble_pair(u32 w) {
  u32 out;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(out) : "r"(w), "r"(0x000F000Fu), "r"(0x64006400u));
  return *reinterpret_cast<__half2*>(&out);
}

// 1024 + 7: subtracting it from nibble_pair gives (q - 7) exactly.
__device__ __forceinline__ __half2 bias2() { return __half2half2(__ushort_as_half(0x6407)); }

template <int N, int K, int LOAD_K, int COMPUTE_K, int VEC_C, int TX_S, int TS, int TR, int TILE_S,
          int TILE_R, int VEC_LOAD, int LN, int LK, int V_SHARED, int UNROLL, int HINT, int PREFETCH>
struct Gemv {
  static constexpr int KW = K / 8;    // words per row
  static constexpr int G = K / 32;    // scale groups per row
  static constexpr int WPT = TILE_R / 8;             // words a thread takes per step
  static constexpr int GPT = WPT >= 4 ? WPT / 4 : 1;  // scale groups a thread touches per step
  static constexpr int WPG = WPT >= 4 ? 4 : WPT;      // of its words, in one group
  static constexpr int ROWS = TS * TILE_S;           // rows a block owns
  static constexpr int STEP_W = TR * WPT;            // words a block walks along K per step
  static constexpr int STEPS = (KW + STEP_W - 1) / STEP_W;
  static constexpr bool EVEN_K = KW % STEP_W == 0;
  static constexpr bool EVEN_N = N % ROWS == 0;
  static constexpr int THREADS = TS * TR;
  // r-values that share a warp, and the lane stride between them
  static constexpr int R_IN_WARP = TX_S ? (TS >= 32 ? 1 : 32 / TS) : (TR < 32 ? TR : 32);
  static constexpr int R_STRIDE = TX_S ? TS : 1;
  static constexpr int R_GROUPS = TR / R_IN_WARP;   // partial sums that meet in shared memory

  static_assert(K % 32 == 0 && N >= 1, "K must be a multiple of 32");
  static_assert(TILE_R % 8 == 0 && (32 % TILE_R == 0 || TILE_R % 32 == 0), "TILE_R: 8,16,32,64,...");
  static_assert(N % LN == 0 && KW % LK == 0, "layout tile must divide the matrix");
  static_assert(TILE_S <= LN, "TILE_S > n is not in the space");
  static_assert(LN == 1 ? LK == 1 : true, "k is meaningless without n");
  static_assert(!LOAD_K || (WPT % VEC_LOAD == 0 && (LN == 1 || LK % VEC_LOAD == 0)),
                "vector load over K must stay inside a contiguous run of words");
  static_assert(LOAD_K || (TILE_S % VEC_LOAD == 0 && LN % VEC_LOAD == 0 && (LK == 1 || VEC_LOAD == 1)),
                "vector load over N needs k == 1 and whole vectors inside an n tile");
  static_assert(VEC_C == 1 || VEC_C == 2, "compute vector: fp32 scalar or half2");
  static_assert(HINT == 0 || HINT == 1, "load hint: 0 plain, 1 no-L1 + L2 256B prefetch");
  static_assert(PREFETCH == 0 || PREFETCH == 1, "prefetch depth: 0 or 1 step");
  static_assert(!(VEC_C == 2 && !COMPUTE_K) || TILE_S % 2 == 0, "half2 over N pairs rows");
  static_assert(THREADS <= 1024 && THREADS % 32 == 0, "block size");
  static_assert(TR % R_IN_WARP == 0, "r-values must fill whole warps");

  __device__ static __forceinline__ i64 word_index(int row, int w) {
    return ((i64)(row / LN) * (KW / LK) + w / LK) * (LN * LK) + (row % LN) * LK + (w % LK);
  }
  __device__ static __forceinline__ i64 scale_index(int row, int g) {
    return ((i64)(row / LN) * G + g) * LN + (row % LN);
  }

  // Words of this thread's tile for one step: q[i][j] = word (row0+i, w0+j).  Out-of-range words
  // read as 0x77777777, i.e. all weights (7 - 7) = 0, so the compute needs no predicate.
  __device__ static __forceinline__ void load_tile(const u32* __restrict__ wq, int row0, int w0,
                                                   u32 (&q)[TILE_S][WPT]) {
    if constexpr (LOAD_K) {
#pragma unroll
      for (int i = 0; i < TILE_S; ++i) {
#pragma unroll
        for (int j = 0; j < WPT; j += VEC_LOAD) {
          const bool ok = (EVEN_N || row0 + i < N) && (EVEN_K || w0 + j < KW);
          if (ok) {
            load_words<VEC_LOAD, HINT>(wq + word_index(row0 + i, w0 + j), &q[i][j]);
          } else {
#pragma unroll
            for (int e = 0; e < VEC_LOAD; ++e) q[i][j + e] = 0x77777777u;
          }
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < WPT; ++j) {
#pragma unroll
        for (int i = 0; i < TILE_S; i += VEC_LOAD) {
          const bool ok = (EVEN_N || row0 + i < N) && (EVEN_K || w0 + j < KW);
          u32 t[VEC_LOAD];
          if (ok) {
            load_words<VEC_LOAD, HINT>(wq + word_index(row0 + i, w0 + j), t);
          } else {
#pragma unroll
            for (int e = 0; e < VEC_LOAD; ++e) t[e] = 0x77777777u;
          }
#pragma unroll
          for (int e = 0; e < VEC_LOAD; ++e) q[i + e][j] = t[e];
        }
      }
    }
  }

  // V is the previous kernel's output: inside a decode step (AUTOSCHED_PDL) it is read with a
  // volatile load, which the compiler cannot hoist above the dependency wait as it may a read-only one
  __device__ static __forceinline__ uint4 ld_v4(const half* p) {
#ifdef AUTOSCHED_PDL
    uint4 r;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p) : "memory");
    return r;
#else
    return __ldg(reinterpret_cast<const uint4*>(p));
#endif
  }

  // Eight halves of V for word w (16 bytes), zeros past the end.
  __device__ static __forceinline__ uint4 load_v(const half* __restrict__ v, const uint4* sv, int w) {
    if (!EVEN_K && w >= KW) return make_uint4(0, 0, 0, 0);
    if constexpr (V_SHARED) return sv[w];
    return ld_v4(v + 8 * w);
  }

  __device__ static __forceinline__ float load_scale(const half* __restrict__ sc, int row, int g) {
    if ((!EVEN_N && row >= N) || (!EVEN_K && g >= G)) return 0.f;
    return __half2float(__ldg(sc + scale_index(row, g)));
  }

  // acc[i] += sum over this step's words of (q - 7) * v, scaled per group.
  __device__ static __forceinline__ void compute(const u32 (&q)[TILE_S][WPT], const uint4 (&vv)[WPT],
                                                 const half* __restrict__ sc, int row0, int w0,
                                                 float (&acc)[TILE_S]) {
#pragma unroll
    for (int gi = 0; gi < GPT; ++gi) {
      const int g = (w0 + gi * WPG) / 4;
      if constexpr (VEC_C == 2 && COMPUTE_K) {
        // Words are packed with nibble order [e0 e2 e4 e6 e1 e3 e5 e7], so pair p is (e2p, e2p+1)
        // and lines up with V's natural half2 pairs.
#pragma unroll
        for (int i = 0; i < TILE_S; ++i) {
          __half2 part = __float2half2_rn(0.f);
#pragma unroll
          for (int jj = 0; jj < WPG; ++jj) {
            const int j = gi * WPG + jj;
            const __half2* v2 = reinterpret_cast<const __half2*>(&vv[j]);
#pragma unroll
            for (int p = 0; p < 4; ++p)
              part = __hfma2(__hsub2(nibble_pair(q[i][j] >> (4 * p)), bias2()), v2[p], part);
          }
          const float2 f = __half22float2(part);
          acc[i] = fmaf(f.x + f.y, load_scale(sc, row0 + i, g), acc[i]);
        }
      } else if constexpr (VEC_C == 2) {
        // Rows (2m, 2m+1) are packed together: word of row 2m holds e0..e3 of both rows, word of
        // row 2m+1 holds e4..e7, so one LOP3 yields (row a, row b) at the same k.
#pragma unroll
        for (int i = 0; i < TILE_S; i += 2) {
          __half2 part = __float2half2_rn(0.f);
#pragma unroll
          for (int jj = 0; jj < WPG; ++jj) {
            const int j = gi * WPG + jj;
            const __half* vh = reinterpret_cast<const __half*>(&vv[j]);
#pragma unroll
            for (int e = 0; e < 8; ++e) {
              const u32 x = e < 4 ? q[i][j] : q[i + 1][j];
              part = __hfma2(__hsub2(nibble_pair(x >> (4 * (e & 3))), bias2()), __half2half2(vh[e]), part);
            }
          }
          const float2 f = __half22float2(part);
          acc[i] = fmaf(f.x, load_scale(sc, row0 + i, g), acc[i]);
          acc[i + 1] = fmaf(f.y, load_scale(sc, row0 + i + 1, g), acc[i + 1]);
        }
      } else {
        // fp32 scalar path, natural nibble order; 0x4B000000 | q is the float 2^23 + q.
        float vf[WPG][8];
#pragma unroll
        for (int jj = 0; jj < WPG; ++jj) {
          const __half* vh = reinterpret_cast<const __half*>(&vv[gi * WPG + jj]);
#pragma unroll
          for (int e = 0; e < 8; ++e) vf[jj][e] = __half2float(vh[e]);
        }
#pragma unroll
        for (int i = 0; i < TILE_S; ++i) {
          float part = 0.f;
#pragma unroll
          for (int jj = 0; jj < WPG; ++jj) {
            const u32 w = q[i][gi * WPG + jj];
#pragma unroll
            for (int e = 0; e < 8; ++e) {
              const float x = __uint_as_float(((w >> (4 * e)) & 0xFu) | 0x4B000000u) - 8388615.0f;
              part = fmaf(x, vf[jj][e], part);
            }
          }
          acc[i] = fmaf(part, load_scale(sc, row0 + i, g), acc[i]);
        }
      }
    }
  }

  template <int EPI>
  __device__ static __forceinline__ void run(const u32* __restrict__ wq, const half* __restrict__ sc,
                                             const half* __restrict__ v, half* __restrict__ out,
                                             const autosched_epi::Args& ea) {
    // [KW] V when V_SHARED, then [R_GROUPS][ROWS] partials (at least [ROWS] row sums when the
    // epilogue needs them staged)
    extern __shared__ uint4 smem[];
    const int s = TX_S ? threadIdx.x : threadIdx.y;
    const int r = TX_S ? threadIdx.y : threadIdx.x;
    const int tid = threadIdx.x + threadIdx.y * blockDim.x;
    const int row0 = blockIdx.x * ROWS + s * TILE_S;

    // PREFETCH: the next step's weights are in flight while this step computes (a register double
    // buffer), and the first step's are requested before V is staged and the block waits on it
#ifdef AUTOSCHED_PDL
    // inside a decode step (programmatic dependent launch): stream this block's weights into the
    // L2 while the previous kernel finishes; V is its output, so it is read only after the wait
    {
      const int r_lo = (int)(blockIdx.x * ROWS / LN) * LN;
      const int r_hi = min(N, (int)((blockIdx.x * ROWS + ROWS + LN - 1) / LN) * LN);
      autosched_pdl::prefetch_l2(wq + (i64)r_lo * KW, (i64)(r_hi - r_lo) * KW * 4, tid, THREADS, gridDim.x);
      autosched_pdl::prefetch_l2(sc + (i64)r_lo * G, (i64)(r_hi - r_lo) * G * 2, tid, THREADS, gridDim.x);
      autosched_pdl::grid_dependents_launch();
    }
#endif
    u32 q[TILE_S][WPT];
    if constexpr (PREFETCH) load_tile(wq, row0, r * WPT, q);
#ifdef AUTOSCHED_PDL
    autosched_pdl::grid_dependency_wait();
#endif
    // the norm's scale is needed only at the end; reading it now hides the round trip
    float scale = 1.f;
    if constexpr (EPI == autosched_epi::NORM || EPI == autosched_epi::NORM_SWIGLU) scale = autosched_epi::norm_scale(ea);

    if constexpr (V_SHARED) {
      for (int w = tid; w < KW; w += THREADS) smem[w] = ld_v4(v + 8 * w);
      __syncthreads();
    }

    float acc[TILE_S];
#pragma unroll
    for (int i = 0; i < TILE_S; ++i) acc[i] = 0.f;

#pragma unroll UNROLL
    for (int step = 0; step < STEPS; ++step) {
      const int w0 = step * STEP_W + r * WPT;
      u32 cur[TILE_S][WPT];
      if constexpr (PREFETCH) {
#pragma unroll
        for (int i = 0; i < TILE_S; ++i)
#pragma unroll
          for (int j = 0; j < WPT; ++j) cur[i][j] = q[i][j];
        if (step + 1 < STEPS) load_tile(wq, row0, w0 + STEP_W, q);
      } else {
        load_tile(wq, row0, w0, cur);
      }
      uint4 vv[WPT];
#pragma unroll
      for (int j = 0; j < WPT; ++j) vv[j] = load_v(v, smem, w0 + j);
      compute(cur, vv, sc, row0, w0, acc);
    }

    // Reduce over r: first among the lanes of a warp, then across warps through shared memory.
#pragma unroll
    for (int off = R_IN_WARP / 2; off >= 1; off /= 2) {
#pragma unroll
      for (int i = 0; i < TILE_S; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], off * R_STRIDE);
    }
    // STORE and NORM write each row sum as it completes; the other epilogues stage the sums in
    // fin (over red's first row, which only the thread finishing that column touches) first
    constexpr bool STAGE = EPI == autosched_epi::RESIDUAL || EPI == autosched_epi::NORM_SWIGLU;
    static_assert(EPI != autosched_epi::NORM_SWIGLU || (ROWS % 2 == 0 && N % 2 == 0),
                  "gate/up row pairs must not straddle blocks");
    float* red = reinterpret_cast<float*>(smem + (V_SHARED ? KW : 0));   // [R_GROUPS][ROWS]
    if constexpr (R_GROUPS == 1) {
      if (r == 0) {
#pragma unroll
        for (int i = 0; i < TILE_S; ++i) {
          if constexpr (STAGE) {
            red[s * TILE_S + i] = acc[i];
          } else if (EVEN_N || row0 + i < N) {
            out[row0 + i] = __float2half_rn(EPI == autosched_epi::NORM ? acc[i] * scale : acc[i]);
          }
        }
      }
    } else {
      if (r % R_IN_WARP == 0) {
#pragma unroll
        for (int i = 0; i < TILE_S; ++i) red[(r / R_IN_WARP) * ROWS + s * TILE_S + i] = acc[i];
      }
      __syncthreads();
      for (int x = tid; x < ROWS; x += THREADS) {
        float sum = 0.f;
#pragma unroll
        for (int g = 0; g < R_GROUPS; ++g) sum += red[g * ROWS + x];
        const int row = blockIdx.x * ROWS + x;
        if constexpr (STAGE) {
          red[x] = sum;
        } else if (EVEN_N || row < N) {
          out[row] = __float2half_rn(EPI == autosched_epi::NORM ? sum * scale : sum);
        }
      }
    }
    if constexpr (STAGE) {
      __syncthreads();
      autosched_epi::finish<EPI, THREADS>(red, ROWS, blockIdx.x * ROWS, N, out, ea, scale);
    }
  }
};

}  // namespace autosched_gemv

template <int N, int K, int LOAD_K, int COMPUTE_K, int VEC_C, int TX_S, int TS, int TR, int TILE_S,
          int TILE_R, int VEC_LOAD, int LN, int LK, int V_SHARED, int UNROLL, int HINT, int PREFETCH>
__global__ void __launch_bounds__(TS * TR)
gemv_q4f16(const u32* __restrict__ wq, const half* __restrict__ scales, const half* __restrict__ v,
           half* __restrict__ out) {
  autosched_gemv::Gemv<N, K, LOAD_K, COMPUTE_K, VEC_C, TX_S, TS, TR, TILE_S, TILE_R, VEC_LOAD, LN, LK,
                       V_SHARED, UNROLL, HINT, PREFETCH>::template run<autosched_epi::STORE>(wq, scales, v, out,
                                                                                      autosched_epi::Args{});
}

// The same GEMV with a decode step's epilogue EPI (epilogue.cuh) on C.
template <int N, int K, int LOAD_K, int COMPUTE_K, int VEC_C, int TX_S, int TS, int TR, int TILE_S,
          int TILE_R, int VEC_LOAD, int LN, int LK, int V_SHARED, int UNROLL, int HINT, int PREFETCH, int EPI>
__global__ void __launch_bounds__(TS * TR)
gemv_q4f16_fused(const u32* __restrict__ wq, const half* __restrict__ scales, const half* __restrict__ v,
                 half* __restrict__ out, float* x, const double* ss_in, double* ss_out, int dim, float eps) {
  autosched_gemv::Gemv<N, K, LOAD_K, COMPUTE_K, VEC_C, TX_S, TS, TR, TILE_S, TILE_R, VEC_LOAD, LN, LK,
                       V_SHARED, UNROLL, HINT, PREFETCH>::template run<EPI>(wq, scales, v, out,
                                                                   autosched_epi::Args{x, ss_in, ss_out, dim, eps});
}

// What a decode step does with a matmul's finished row sums C[r], so that the residual add, the
// RMSNorm and SiLU x up ride on the matmuls instead of taking launches of their own (three fewer a
// layer; at batch 1 each launch costs more in ramp-up and tail than its few kilobytes of traffic).
//
//   STORE        out[r] = C[r]
//   NORM         out[r] = C[r] * rsqrt(ss_in[0] / dim + eps)
//                The matmul's V is the raw residual stream and its weight columns carry the norm's
//                weight (W diag(w)), so RMSNorm(x) feeding W is one scale on the row sums.
//   RESIDUAL     x[r] += C[r];  out[r] = x[r] in the activation type (the next matmul's V);
//                ss_out[0] += sum of the new x[r]^2 (one atomic a warp), the next norm's input
//   NORM_SWIGLU  rows (2i, 2i+1) hold (gate i, up i), both NORM-scaled: out[i] = silu(g) * u
//
// The residual x stays float (see decode.cuh).  The sums of squares are doubles: warps add their
// float partials atomically in whatever order they finish, and in double the order changes the sum
// by ~1e-13 of it, so the float scale a norm applies is the same from run to run except when the
// sum falls within that of a float rounding boundary (one norm in ~10^6).  ss_in is written by an
// earlier kernel of the step, so it is read through L2 (ld.cg) after the dependency wait, never
// through the read-only path.
#pragma once
#include <cuda_fp16.h>

namespace autosched_epi {

enum : int { STORE = 0, NORM = 1, RESIDUAL = 2, NORM_SWIGLU = 3 };

struct Args {
  float* x;              // RESIDUAL: the residual stream, updated in place (a row has one owner)
  const double* ss_in;   // NORM, NORM_SWIGLU: sum of squares of the residual V copies
  double* ss_out;        // RESIDUAL: accumulates the sum of squares of the updated residual
  int dim;               // length of the normalized vector
  float eps;
};

__device__ __forceinline__ float norm_scale(const Args& a) {
  // __fdividef: an IEEE division (double or float) calls a slow-path subroutine whose stack frame
  // ptxas reports as spills in some kernels; rsqrtf is approximate to 2 ulp anyway
  return rsqrtf(__fdividef((float)__ldcg(a.ss_in), (float)a.dim) + a.eps);
}

template <typename O> __device__ __forceinline__ O to_out(float v);
template <> __device__ __forceinline__ float to_out<float>(float v) { return v; }
template <> __device__ __forceinline__ __half to_out<__half>(float v) { return __float2half_rn(v); }

// The block's rows [row0, row0 + rows) have their sums in fin (shared memory, complete: the caller
// synchronized after writing it); rows at or past n are padding.  For RESIDUAL and NORM_SWIGLU,
// which need a row's neighbours or a block-wide sum; `scale` is NORM_SWIGLU's norm_scale(a), read by
// the caller where it costs least (the q4 GEMV right after its dependency wait, so the round trip
// hides behind the matmul).  THREADS whole warps, linear thread ids.
template <int EPI, int THREADS, typename O>
__device__ __forceinline__ void finish(const float* fin, int rows, int row0, int n, O* out, const Args& a,
                                       float scale) {
  static_assert(EPI == RESIDUAL || EPI == NORM_SWIGLU, "STORE and NORM write straight from the sums");
  static_assert(THREADS % 32 == 0, "whole warps");
  const int tid = threadIdx.x + threadIdx.y * blockDim.x;
  if constexpr (EPI == RESIDUAL) {
    float sq = 0.f;
    for (int i = tid; i < rows; i += THREADS) {
      const int r = row0 + i;
      if (r < n) {
        const float v = a.x[r] + fin[i];
        a.x[r] = v;
        out[r] = to_out<O>(v);
        sq += v * v;
      }
    }
    if ((tid & ~31) < rows) {         // the warps that own rows (a warp-uniform test)
#pragma unroll
      for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
      if ((tid & 31) == 0) atomicAdd(a.ss_out, (double)sq);
    }
  } else {
    for (int i = tid; 2 * i < rows; i += THREADS) {
      const int r = row0 + 2 * i;
      if (r < n) {
        const float g = fin[2 * i] * scale, u = fin[2 * i + 1] * scale;
        out[r / 2] = to_out<O>(g / (1.f + __expf(-g)) * u);
      }
    }
  }
}

}  // namespace autosched_epi

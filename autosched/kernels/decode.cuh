// Kernels of one Llama decode step besides the matmuls (fp32 activations), llama2.c semantics.
//
//   rmsnorm       out (dim) = x * rsqrt(mean(x^2) + eps) * w           one block
//   rope          q (n_heads*hs), k (n_kv_heads*hs): pairs (2i, 2i+1) of each head rotated by
//                 pos * theta^(-2i/hs)                                  one thread per pair
//   silu_mul      g (n) = silu(g) * u
//   residual_add  x (n) += y
//   attention     out (n_heads*hs) = softmax(q . K[0..pos] / sqrt(hs)) . V[0..pos] per head, over
//                 a cache K, V (seq_len, kv_dim); head h reads kv head h / kv_mul   one block a head
#pragma once

namespace autosched_decode {

// Sum over the block; every thread gets the result.  `red` holds THREADS / 32 floats.
template <int THREADS>
__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
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

}  // namespace autosched_decode

template <int THREADS>
__global__ void __launch_bounds__(THREADS)
rmsnorm(float* __restrict__ out, const float* __restrict__ x, const float* __restrict__ w, int dim, float eps) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps");
  __shared__ float red[THREADS / 32];
  float ss = 0.f;
  for (int i = threadIdx.x; i < dim; i += THREADS) ss += x[i] * x[i];
  const float inv = rsqrtf(autosched_decode::block_sum<THREADS>(ss, red) / dim + eps);
  for (int i = threadIdx.x; i < dim; i += THREADS) out[i] = x[i] * inv * w[i];
}

__global__ void rope(float* __restrict__ q, float* __restrict__ k, int pos, int q_dim, int kv_dim,
                     int head_size, float theta) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;     // pair index over q
  if (2 * p >= q_dim) return;
  const int j = (2 * p) % head_size;
  const float ang = pos * powf(theta, -(float)j / head_size);
  float s, c;
  sincosf(ang, &s, &c);
  float a = q[2 * p], b = q[2 * p + 1];
  q[2 * p] = a * c - b * s;
  q[2 * p + 1] = a * s + b * c;
  if (2 * p < kv_dim) {
    a = k[2 * p];
    b = k[2 * p + 1];
    k[2 * p] = a * c - b * s;
    k[2 * p + 1] = a * s + b * c;
  }
}

__global__ void silu_mul(float* __restrict__ g, const float* __restrict__ u, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g[i] = g[i] / (1.f + __expf(-g[i])) * u[i];
}

__global__ void residual_add(float* __restrict__ x, const float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

// scores (pos + 1 floats) live in dynamic shared memory: seq_len * 4 bytes must fit the block.
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
attention(float* __restrict__ out, const float* __restrict__ q, const float* __restrict__ k_cache,
          const float* __restrict__ v_cache, int pos, int kv_dim, int head_size, int kv_mul) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps");
  extern __shared__ float scores[];
  __shared__ float red[THREADS / 32];
  const int h = blockIdx.x;
  const float* qh = q + h * head_size;
  const int koff = (h / kv_mul) * head_size;
  const float scale = rsqrtf((float)head_size);

  float m = -__int_as_float(0x7f800000);     // -inf (NVRTC has no <cmath> INFINITY)
  for (int t = threadIdx.x; t <= pos; t += THREADS) {
    const float* kt = k_cache + (long long)t * kv_dim + koff;
    float s = 0.f;
    for (int i = 0; i < head_size; ++i) s += qh[i] * kt[i];
    s *= scale;
    scores[t] = s;
    m = fmaxf(m, s);
  }
  m = autosched_decode::block_max<THREADS>(m, red);
  float sum = 0.f;
  for (int t = threadIdx.x; t <= pos; t += THREADS) {
    const float e = __expf(scores[t] - m);
    scores[t] = e;
    sum += e;
  }
  sum = autosched_decode::block_sum<THREADS>(sum, red);
  __syncthreads();      // every thread reads every score below
  const float inv = 1.f / sum;
  for (int i = threadIdx.x; i < head_size; i += THREADS) {
    float acc = 0.f;
    for (int t = 0; t <= pos; ++t) acc += scores[t] * v_cache[(long long)t * kv_dim + koff + i];
    out[h * head_size + i] = acc * inv;
  }
}

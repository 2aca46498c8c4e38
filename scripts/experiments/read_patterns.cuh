// The q4 GEMV's read order over a weight-sized buffer (scripts/experiments/read_patterns.py, which
// times it against the grid-wide sweep of kernels/stream_read.cuh, a copy's order):
//
//   regions  block b reads its own contiguous [b * per, (b + 1) * per) words, T at a time
//
// UNROLL independent 16-byte loads a thread are in flight; the XOR keeps them alive.
#pragma once

// XOR of src[lo, hi), the block's threads striding over it with UNROLL loads each in flight.
template <int UNROLL>
__device__ __forceinline__ unsigned xor_range(const uint4* __restrict__ src, long long lo, long long hi) {
  unsigned acc = 0;
  long long i = lo + threadIdx.x;
  for (; i + (UNROLL - 1) * blockDim.x < hi; i += UNROLL * blockDim.x) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(src + i + u * blockDim.x);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < hi; i += blockDim.x) {
    const uint4 v = __ldg(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  return acc;
}

// XOR of this block's region of src (n16 16-byte words cut into gridDim.x regions).
template <int UNROLL>
__device__ __forceinline__ unsigned xor_region(const uint4* __restrict__ src, long long n16) {
  const long long per = (n16 + gridDim.x - 1) / gridDim.x;
  const long long lo = blockIdx.x * per, hi = min(n16, lo + per);
  return xor_range<UNROLL>(src, lo, hi);
}

template <int UNROLL>
__global__ void read_regions(const uint4* __restrict__ src, long long n16, unsigned never, unsigned* sink) {
  const unsigned acc = xor_region<UNROLL>(src, n16);
  if (acc == never) sink[0] = acc;
}

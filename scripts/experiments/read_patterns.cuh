// Read-only streams over one weight-sized buffer in two address orders, to ask whether the q4 GEMV's
// per-block regions (each block walks its own contiguous rows, kernels/gemv_q4f16.cuh) cost DRAM
// bandwidth against the grid-wide sweep a copy makes (scripts/experiments/read_patterns.py).
//
//   sweep    step s of block b reads the 16-byte words [(s * grid + b) * T, ... + T): at any moment
//            the whole grid reads one window of the buffer
//   regions  block b reads its own contiguous [b * per, (b + 1) * per) words, T at a time
//
// UNROLL independent 16-byte loads a thread are in flight; the XOR keeps them alive.
template <int UNROLL>
__global__ void read_sweep(const uint4* __restrict__ src, long long n16, unsigned never, unsigned* sink) {
  unsigned acc = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += stride) {
    const uint4 v = __ldg(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == never) sink[0] = acc;
}

template <int UNROLL>
__global__ void read_regions(const uint4* __restrict__ src, long long n16, unsigned never, unsigned* sink) {
  unsigned acc = 0;
  const long long per = (n16 + gridDim.x - 1) / gridDim.x;
  const long long lo = blockIdx.x * per, hi = min(n16, lo + per);
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
  if (acc == never) sink[0] = acc;
}

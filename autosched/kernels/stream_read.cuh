// Read-only streaming kernel: the "read stream" half of the same-bytes floor (BENCHMARKS.md).
//
//   src  (n16) uint4, read once with 16-byte loads, grid-stride
//   sink (1)   u32, written only if the XOR of everything read equals `never` (a value the caller
//              picks so it does not happen), which keeps the loads alive without a store stream
#pragma once

template <int UNROLL>
__global__ void stream_read(const uint4* __restrict__ src, long long n16, unsigned never,
                            unsigned* __restrict__ sink) {
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

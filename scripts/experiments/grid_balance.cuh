// Does a weight stream's split over the SMs set its time (scripts/experiments/grid_balance.py)?
// When every block of a grid is resident from the start, an SM's share of the bytes is fixed by
// how many blocks it got: 192 blocks on 132 SMs leave 60 SMs with twice the work of the rest.
//
//   stream_static   block b reads its own contiguous region (as the q4 GEMV's blocks do), after
//                   the same dependency read as boundary_cost.cuh's kernels
//   stream_dynamic  blocks take CHUNK-word chunks from a counter until none are left, so every SM
//                   works until the stream is nearly done; counters[0] is this launch's counter
#include "read_patterns.cuh"

template <int UNROLL>
__global__ void stream_static(const uint4* __restrict__ src, long long n16, const unsigned* prev, unsigned* mine) {
  unsigned acc = xor_region<UNROLL>(src, n16);
  acc ^= __ldcg(prev + (blockIdx.x & 31));
  if (threadIdx.x == 0) mine[blockIdx.x & 31] = acc;
}

template <int UNROLL, int CHUNK>
__global__ void stream_dynamic(const uint4* __restrict__ src, long long n16, unsigned* counter, unsigned* mine) {
  __shared__ unsigned next[2];
  const unsigned chunks = (unsigned)((n16 + CHUNK - 1) / CHUNK);
  unsigned acc = 0;
  if (threadIdx.x == 0) next[0] = atomicAdd(counter, 1u);
  __syncthreads();
  for (int parity = 0;; parity ^= 1) {
    const unsigned c = next[parity];
    if (c >= chunks) break;
    // the following chunk's index is asked for now, so its round trip hides behind this chunk
    if (threadIdx.x == 0) next[parity ^ 1] = atomicAdd(counter, 1u);
    const long long lo = (long long)c * CHUNK;
    acc ^= xor_range<UNROLL>(src, lo, min(n16, lo + CHUNK));
    __syncthreads();
  }
  if (threadIdx.x == 0) mine[blockIdx.x & 31] = acc;
}
